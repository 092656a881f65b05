"""What a file tool sees of a text file: its text with held credentials and secret shapes redacted,
as the log would keep it (ADR 0322).

fs-read's answer is redacted when it is logged, but a tool that matched, counted or numbered the
raw text would still answer by what it hides: one fs-grep per position and character
(``^CORP_LLM=.{k}c``) rebuilds a held value from which calls matched. So every file tool reads
through this view: the bytes decoded (invalid UTF-8 replaced), then ``redact_text`` with the
session's held values, in blocks of whole lines; lines are the view's lines.
"""

from __future__ import annotations

import os
import sys
from collections import OrderedDict
from collections.abc import Iterator
from typing import BinaryIO

from nodwyn.agent.tools.deadline import Deadline
from nodwyn.log import Known, redact_text

BLOCK = 4 * 1024 * 1024  # bytes redacted at once (a whole-file read or a grepped file is one block)


def blocks(f: BinaryIO, known: Known, deadline: Deadline, limit: int | None = None) -> Iterator[str]:
    """The view of ``f`` from where it is, in blocks of about ``BLOCK`` bytes that end at a line's
    end (a line longer than a block is cut); at most ``limit`` bytes when given."""
    left = sys.maxsize if limit is None else limit
    while left > 0:
        chunk = f.read(min(BLOCK, left))
        if not chunk:
            return
        if not chunk.endswith(b"\n") and left > len(chunk):
            chunk += f.readline(min(BLOCK, left - len(chunk)))
        left -= len(chunk)
        deadline.check()
        yield redact_text(chunk.decode("utf-8", errors="replace"), known)


def text(f: BinaryIO, known: Known, deadline: Deadline, limit: int | None = None) -> str:
    """The view of ``f`` whole (up to ``limit`` bytes)."""
    return "".join(blocks(f, known, deadline, limit))


class ViewCache:
    """Views already made in this session, by file identity and version (device, inode, size,
    modification and change times), least recently used dropped past ``limit`` characters: a
    model that searches the same tree again (or the same file 1,500 times) redacts it once."""

    def __init__(self, limit: int = 64 * 1024 * 1024) -> None:
        self.limit = limit
        self.size = 0
        self._views: OrderedDict[tuple[int, ...], str] = OrderedDict()

    def text(self, f: BinaryIO, known: Known, deadline: Deadline, limit: int | None = None) -> str:
        """``text(f, ...)`` of a whole file (read from its start), from the cache when unchanged."""
        st = os.fstat(f.fileno())
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, limit or -1)
        found = self._views.get(key)
        if found is not None:
            self._views.move_to_end(key)
            return found
        made = text(f, known, deadline, limit)
        if len(made) <= self.limit:
            self._views[key] = made
            self.size += len(made)
            while self.size > self.limit:
                _, dropped = self._views.popitem(last=False)
                self.size -= len(dropped)
        return made


def lines(f: BinaryIO, known: Known, deadline: Deadline) -> Iterator[str]:
    """The view's lines, each with its ``\\n`` (the last may lack one); only ``\\n`` ends a line."""
    carry = ""
    for block in blocks(f, known, deadline):
        parts = (carry + block).split("\n")
        carry = parts.pop()
        for part in parts:
            yield part + "\n"
    if carry:
        yield carry
