"""The seq -> offset index of a session log: ``index.bin`` (docs/adr/0006-index-format.md).

Format: the 8-byte magic ``NDWNIDX1``, then one little-endian unsigned 64-bit integer per event:
entry ``k`` (seq ``k``) is the byte offset just past the newline ending seq ``k``'s line. Seq ``k``
therefore spans ``[end(k-1), end(k))`` with ``end(0) = 0``. The writer appends an entry after its
line is written, so the index is never ahead of a healthy log; it is derived data, never fsynced,
checked in O(1) on every open and read, caught up from the log when it lags, and rebuilt from the
log when it disagrees.
"""

from __future__ import annotations

import os
import struct
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from nodwyn.errors import CorruptLogError
from nodwyn.log.jsonl import FIX, seq_prefix

INDEX_NAME: Final = "index.bin"
MAGIC: Final = b"NDWNIDX1"
HEADER: Final = len(MAGIC)
ENTRY: Final = 8
_U64: Final = struct.Struct("<Q")
_CHUNK: Final = 1 << 20
_HEAD: Final = 32  # bytes of a line kept to check its seq prefix


def _array(raw: bytes) -> array[int]:
    out = array("Q")
    out.frombytes(raw)
    if sys.byteorder != "little":  # pragma: no cover - the format is little-endian everywhere
        out.byteswap()
    return out


def _bytes(ends: Sequence[int]) -> bytes:
    arr = array("Q", ends)
    if sys.byteorder != "little":  # pragma: no cover
        arr.byteswap()
    return arr.tobytes()


@dataclass(slots=True, eq=False)
class IndexFile:
    """``index.bin`` opened for reading (and for appending by the writer)."""

    path: Path
    fd: int
    writable: bool

    @classmethod
    def open(cls, path: Path, writable: bool) -> IndexFile | None:
        """None when the file is missing or has no valid header."""
        try:
            fd = os.open(path, (os.O_RDWR if writable else os.O_RDONLY) | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        if os.pread(fd, HEADER, 0) != MAGIC:
            os.close(fd)
            return None
        return cls(path, fd, writable)

    @classmethod
    def write_new(cls, path: Path, ends: Sequence[int]) -> IndexFile:
        """Replace ``path`` atomically by an index holding ``ends``; open the new file for writing."""
        tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        with open(fd, "wb") as fh:
            fh.write(MAGIC)
            fh.write(_bytes(ends))
        os.replace(tmp, path)
        index = cls.open(path, writable=True)
        assert index is not None
        return index

    def count(self) -> int:
        return max(0, (os.fstat(self.fd).st_size - HEADER) // ENTRY)

    def end(self, seq: int) -> int:
        """End offset of ``seq``'s line (``end(0) == 0``)."""
        if seq == 0:
            return 0
        raw = os.pread(self.fd, ENTRY, HEADER + (seq - 1) * ENTRY)
        if len(raw) != ENTRY:
            raise IndexError(seq)
        return int(_U64.unpack(raw)[0])

    def ends(self, first: int, last: int) -> array[int]:
        """End offsets of seqs ``first..last`` (all must be in the file)."""
        if last < first:
            return array("Q")
        raw = os.pread(self.fd, (last - first + 1) * ENTRY, HEADER + (first - 1) * ENTRY)
        if len(raw) != (last - first + 1) * ENTRY:
            raise IndexError(last)
        return _array(raw)

    def append(self, seq: int, end: int) -> None:
        os.pwrite(self.fd, _U64.pack(end), HEADER + (seq - 1) * ENTRY)

    def extend(self, first_seq: int, ends: Sequence[int]) -> None:
        if ends:
            os.pwrite(self.fd, _bytes(ends), HEADER + (first_seq - 1) * ENTRY)

    def truncate(self, count: int) -> None:
        os.ftruncate(self.fd, HEADER + count * ENTRY)

    def close(self) -> None:
        os.close(self.fd)


@dataclass(frozen=True, slots=True, kw_only=True)
class Scan:
    """Whole lines found in ``[start, stop)`` of the log."""

    ends: list[int]  # end offset of each whole line, in order
    whole_end: int  # offset past the last whole line (``start`` if none)
    bad_seq: int | None = None  # a line whose seq prefix was wrong: the seq it should have held
    bad_offset: int | None = None


def scan_lines(fd: int, start: int, stop: int, first_seq: int) -> Scan:
    """Find the lines in ``[start, stop)``, checking each begins with ``{"seq":N,`` for N from ``first_seq``.

    Stops at the first line whose prefix is wrong and reports it. Bytes after the last newline are
    not a line (a torn write, or one in progress).
    """
    ends: list[int] = []
    seq = first_seq
    line_start = start
    head = b""
    pos = start
    while pos < stop:
        chunk = os.pread(fd, min(_CHUNK, stop - pos), pos)
        if not chunk:
            break
        i = 0
        n = len(chunk)
        while True:
            j = chunk.find(b"\n", i)
            if len(head) < _HEAD:
                head += chunk[i : min(n if j < 0 else j + 1, i + _HEAD - len(head))]
            if j < 0:
                break
            if not head.startswith(seq_prefix(seq)):
                return Scan(ends=ends, whole_end=line_start, bad_seq=seq, bad_offset=line_start)
            line_start = pos + j + 1
            ends.append(line_start)
            seq += 1
            head = b""
            i = j + 1
        pos += n
    return Scan(ends=ends, whole_end=line_start)


def rebuild(fd: int, size: int, session: str) -> Scan:
    """Every whole line of the log from byte 0; a line out of sequence is corruption."""
    scan = scan_lines(fd, 0, size, 1)
    if scan.bad_seq is not None:
        raise CorruptLogError(
            f"session {session}: the line at byte {scan.bad_offset} should start with "
            f"{seq_prefix(scan.bad_seq).decode()!r} (seq {scan.bad_seq}) but does not; {FIX}"
        )
    return scan


def check_tail(log_fd: int, index: IndexFile, size: int) -> bool:
    """O(1): does the index's last entry end a line of the log whose prefix names its seq?"""
    count = index.count()
    if count == 0:
        return True
    end, start = index.end(count), index.end(count - 1)
    if not (start < end <= size):
        return False
    if os.pread(log_fd, 1, end - 1) != b"\n":
        return False
    if start > 0 and os.pread(log_fd, 1, start - 1) != b"\n":
        return False
    prefix = seq_prefix(count)
    return os.pread(log_fd, len(prefix), start) == prefix
