"""``nodwyn chat``'s line history (``<NODWYN_HOME>/chat-history``): the person's alone, and redacted.

A line is redacted (the credentials held now and every shape the log redacts) before it is saved,
as the log redacts it; the file is created 0600 and an older one is made 0600 and cleared of what
the current redaction catches when a chat opens it (ADR 0335). The chat itself still sees what was
typed: only the file is cleared.
"""

from __future__ import annotations

import os
from pathlib import Path

from prompt_toolkit.history import FileHistory

from nodwyn.log import Known, redact_text

HISTORY_NAME = "chat-history"
_MODE = 0o600


class RedactedHistory(FileHistory):
    """prompt_toolkit's file history, saving only redacted lines into a 0600 file."""

    def __init__(self, path: Path, known: Known) -> None:
        self.known = known
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, _MODE)
        try:
            os.fchmod(fd, _MODE)
            with os.fdopen(os.dup(fd), "rb") as fh:
                old = fh.read().decode("utf-8", "replace")
            clean = redact_text(old, known) if old else old
            if clean != old:
                os.ftruncate(fd, 0)
                os.pwrite(fd, clean.encode("utf-8"), 0)
        finally:
            os.close(fd)
        super().__init__(str(path))

    def store_string(self, string: str) -> None:
        super().store_string(redact_text(string, self.known))
