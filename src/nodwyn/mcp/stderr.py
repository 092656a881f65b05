"""A server's stderr, drained through a pipe into a redacted file under the session's folder.

Servers start before the session's log exists (their tools are part of its recipe), so the lines
wait in memory until ``bind`` names the folder; each line passes the log's redaction before it is
written, and the file stops growing at ``MAX_BYTES`` (one line says so).
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import IO

from nodwyn.log import NO_KNOWN, Known, redact_text

MAX_BYTES = 4 * 1024 * 1024
MAX_LINE = 8192


class StderrSink:
    """The write end goes to the server (``writer``); a thread reads the other end."""

    def __init__(self, server: str, known: Known | None) -> None:
        self.server = server
        self._known = known
        read_fd, write_fd = os.pipe()
        os.set_inheritable(write_fd, True)
        self.writer: IO[str] = os.fdopen(write_fd, "w")
        self._reader = os.fdopen(read_fd, "rb")
        self._lock = threading.Lock()
        self._pending: list[str] = []
        self._path: Path | None = None
        self._written = 0
        self._full = False
        self.tail: list[str] = []  # the last lines, for a message about a server that would not start
        self._thread = threading.Thread(target=self._drain, name=f"mcp-stderr-{server}", daemon=True)
        self._thread.start()

    def spawned(self) -> None:
        """The server holds its copy of the write end: close ours, so its exit ends the drain."""
        with contextlib.suppress(OSError):
            self.writer.close()

    def bind(self, folder: Path) -> Path:
        path = folder / f"mcp-{self.server}.stderr"
        with self._lock:
            self._path = path
            pending, self._pending = self._pending, []
            self._write(pending)
        return path

    def _drain(self) -> None:
        with self._reader:
            for raw in self._reader:
                line = raw[:MAX_LINE].decode("utf-8", "replace").rstrip("\n")
                line = redact_text(line, self._known or NO_KNOWN)
                with self._lock:
                    self.tail = [*self.tail[-4:], line]
                    if self._path is not None:
                        self._write([line])
                    elif len(self._pending) < 10000:
                        self._pending.append(line)

    def _write(self, lines: list[str]) -> None:
        if not lines or self._full or self._path is None:
            return
        text = "".join(f"{line}\n" for line in lines)
        if self._written + len(text) > MAX_BYTES:
            text = f"[nodwyn: {self.server}'s stderr passed {MAX_BYTES} bytes; the rest is not kept]\n"
            self._full = True
        with contextlib.suppress(OSError), open(self._path, "a", encoding="utf-8") as f:
            f.write(text)
        self._written += len(text)

    def close(self, timeout: float = 1.0) -> None:
        self.spawned()
        self._thread.join(timeout)
