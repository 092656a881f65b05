"""A session's content-addressed attachment store: ``<session>/attachments/<sha256 hex>``.

``put`` writes to a temporary file, fsyncs it and renames it into place (then fsyncs the folder),
so a name only ever holds whole, verified bytes; ``get`` checks the digest again on the way out.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from pathlib import Path
from typing import Final

from nodwyn.errors import CorruptLogError, NodwynError, NotFoundError
from nodwyn.log.paths import storage_error
from nodwyn.log.redact import NO_KNOWN, Known

ATTACHMENTS_NAME: Final = "attachments"
FILE_MODE: Final = 0o600  # a session's files are the person's alone: prompts, code, tool output
DIR_MODE: Final = 0o700
_DIGEST: Final = re.compile(r"[0-9a-f]{64}")


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Attachments:
    __slots__ = ("_fsync", "known", "path", "session")

    def __init__(self, path: Path, session: str, fsync: bool = True, known: Known = NO_KNOWN) -> None:
        self.path = path
        self.session = session
        self._fsync = fsync
        self.known = known

    def _file(self, digest: str) -> Path:
        if not _DIGEST.fullmatch(digest):
            raise NotFoundError(
                f"session {self.session}: {digest!r} is not an attachment digest (64 lowercase hex digits)"
            )
        return self.path / digest

    def put(self, data: bytes) -> str:
        """Store ``data``; return its hex SHA-256. Storing the same bytes twice is a no-op.
        A disk that refuses is a one-line ``StorageError``; no partial file is left under any name."""
        for value in (*self.known.values, *self.known.forms):
            if value.encode() in data:
                # bytes cannot be redacted in place (an image would break): refuse them instead
                raise NodwynError(
                    f"session {self.session}: an attachment holds the value of a credential nodwyn holds; "
                    "it was not stored: remove the credential from the file and attach it again"
                )
        try:
            return self._put(data)
        except OSError as exc:
            raise storage_error(exc, f"session {self.session}: cannot store an attachment") from None

    def _put(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        target = self._file(digest)
        if target.exists():
            return digest
        self.path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        tmp = self.path / f".tmp-{os.getpid()}-{secrets.token_hex(4)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, FILE_MODE)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if self._fsync:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.close(fd)
        os.replace(tmp, target)
        if self._fsync:
            fsync_dir(self.path)
        return digest

    def get(self, digest: str) -> bytes:
        target = self._file(digest)
        try:
            data = target.read_bytes()
        except FileNotFoundError:
            raise NotFoundError(f"session {self.session}: no attachment {digest} in {self.path}") from None
        except OSError as exc:
            raise storage_error(exc, f"session {self.session}: cannot read attachment {digest}") from None
        actual = hashlib.sha256(data).hexdigest()
        if actual != digest:
            raise CorruptLogError(
                f"session {self.session}: attachment {target} holds bytes with digest {actual}, not its "
                "name; the file is damaged: restore it from a copy or remove it"
            )
        return data

    def has(self, digest: str) -> bool:
        return _DIGEST.fullmatch(digest) is not None and (self.path / digest).is_file()
