"""A session's seal: a chained HMAC over its events, kept in ``<session>/seal.bin`` (ADR 0336).

A request's digest proves that the request can be rebuilt from the log; anyone who edits the log
can rewrite the digests too. The seal is for people who need to know the log is as it was
written: a key only the person holds (the keychain's ``nodwyn-seal`` entry) chains a MAC through
every line, ``mac(0) = HMAC(key, "nodwyn-seal-v1\\0" + session id)``, ``mac(k) = HMAC(key,
mac(k-1) + line k)``, and ``seal.bin`` (the 8-byte magic ``NDWNSEAL``, then 32 bytes per seq) is
the seal index beside ``index.bin``: seq -> the chain's value there. An edited, inserted, removed
or reordered line, or a log swapped for another session's, breaks the chain from that seq on;
``verify`` names the first seq that does not match.

The writer appends seq k's MAC to seal.bin (and syncs it, as it syncs the log) *before* the line,
so a crash leaves the seal at most one entry ahead, which the next writer drops; a seal that is
behind its log means lines were added without the key: the writer does not extend it, and
``verify`` reports the unsealed seqs. Sealing is opt-in: a session is sealed from its first event
when the key is held as it is created.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

SEAL_NAME: Final = "seal.bin"
MAGIC: Final = b"NDWNSEAL"
MAC_SIZE: Final = 32
_CONTEXT: Final = b"nodwyn session seal v1"


@dataclass(frozen=True, slots=True)
class SealKey:
    """The key derived from the keychain entry; never shown."""

    key: bytes = field(repr=False)

    @classmethod
    def from_secret(cls, secret: str) -> SealKey:
        return cls(hmac.new(secret.encode("utf-8"), _CONTEXT, hashlib.sha256).digest())

    def first(self, session_id: str) -> bytes:
        return hmac.new(self.key, b"nodwyn-seal-v1\0" + session_id.encode(), hashlib.sha256).digest()

    def next(self, previous: bytes, line: bytes | memoryview) -> bytes:
        mac = hmac.new(self.key, previous, hashlib.sha256)
        mac.update(line)
        return mac.digest()

    def __repr__(self) -> str:
        return "SealKey(...)"


@dataclass(slots=True, eq=False)
class SealFile:
    """``seal.bin`` open for the writer: its entries' count, its last MAC, appending and cutting."""

    path: Path
    fd: int
    fsync: bool

    @classmethod
    def create(cls, folder: Path, fsync: bool) -> SealFile:
        path = folder / SEAL_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        os.write(fd, MAGIC)
        return cls(path, fd, fsync)

    @classmethod
    def open(cls, folder: Path, fsync: bool) -> SealFile | None:
        """None when there is no seal (or not one this version reads)."""
        path = folder / SEAL_NAME
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        if os.pread(fd, len(MAGIC), 0) != MAGIC:
            os.close(fd)
            return None
        return cls(path, fd, fsync)

    def count(self) -> int:
        return max(os.fstat(self.fd).st_size - len(MAGIC), 0) // MAC_SIZE

    def mac(self, seq: int) -> bytes:
        return os.pread(self.fd, MAC_SIZE, len(MAGIC) + (seq - 1) * MAC_SIZE)

    def cut(self, count: int) -> None:
        os.ftruncate(self.fd, len(MAGIC) + count * MAC_SIZE)

    def put(self, seq: int, mac: bytes) -> None:
        """Seq ``seq``'s MAC, in place (the entry after the last), made durable as the log is."""
        os.pwrite(self.fd, mac, len(MAGIC) + (seq - 1) * MAC_SIZE)
        if self.fsync:
            os.fdatasync(self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@dataclass(slots=True, eq=False)
class Sealer:
    """The writer's side: the chain's value at the log's last seq, and the seal file."""

    key: SealKey
    file: SealFile
    last: bytes = field(repr=False)

    @classmethod
    def start(cls, key: SealKey, folder: Path, session_id: str, count: int, fsync: bool) -> Sealer | None:
        """Sealing for a writer whose log holds ``count`` whole events: a new seal on an empty log,
        the chain carried on where the seal covers the log exactly; None when the log has lines
        the seal does not cover (added without the key) or it was never sealed."""
        file = SealFile.open(folder, fsync)
        if file is None:
            if count:
                return None
            return cls(key, SealFile.create(folder, fsync), key.first(session_id))
        have = file.count()
        if have > count:
            file.cut(count)  # a crash between the seal's entry and its line: the line is not there
        elif have < count:
            file.close()
            return None
        last = file.mac(count) if count else key.first(session_id)
        return cls(key, file, last)

    def before(self, seq: int, line: bytes) -> bytes:
        """Seal ``line`` as seq ``seq``, before it is written; returns the new chain value."""
        mac = self.key.next(self.last, line)
        self.file.put(seq, mac)
        return mac

    def written(self, mac: bytes) -> None:
        self.last = mac

    def undo(self, seq: int) -> None:
        """The line for ``seq`` was not written: drop its entry."""
        self.file.cut(seq - 1)

    def close(self) -> None:
        self.file.close()


@dataclass(frozen=True, slots=True, kw_only=True)
class SealCheck:
    """What ``check`` found: ``events`` whole lines, the seal covering ``sealed`` of them, the first
    seq whose MAC does not match (None: every sealed one matches)."""

    events: int
    sealed: int
    first_bad: int | None
    present: bool


def check(key: SealKey, folder: Path, session_id: str, lines: Iterable[bytes]) -> SealCheck:
    """Recompute the chain over ``lines`` (the log's whole lines, in seq order) against seal.bin."""
    try:
        raw = (folder / SEAL_NAME).read_bytes()
    except FileNotFoundError:
        return SealCheck(events=sum(1 for _ in lines), sealed=0, first_bad=None, present=False)
    if not raw.startswith(MAGIC):
        return SealCheck(events=sum(1 for _ in lines), sealed=0, first_bad=1, present=True)
    macs = raw[len(MAGIC) :]
    sealed = len(macs) // MAC_SIZE
    mac = key.first(session_id)
    events = 0
    first_bad: int | None = None
    for line in lines:
        events += 1
        mac = key.next(mac, line)
        if first_bad is None and events <= sealed:
            want = macs[(events - 1) * MAC_SIZE : events * MAC_SIZE]
            if not hmac.compare_digest(mac, want):
                first_bad = events
    if first_bad is None and sealed > events:
        first_bad = events + 1  # entries for lines the log no longer has: it was cut
    return SealCheck(events=events, sealed=min(sealed, events), first_bad=first_bad, present=True)


def _lines(path: Path) -> Iterator[bytes]:
    """The whole lines of ``path`` (a torn last line, without its newline, is not one)."""
    with open(path, "rb") as fh:
        for line in fh:
            if line.endswith(b"\n"):
                yield line


def check_session(key: SealKey, folder: Path, session_id: str) -> SealCheck:
    """``check`` over the session's ``log.jsonl``."""
    return check(key, folder, session_id, _lines(folder / "log.jsonl"))
