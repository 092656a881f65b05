"""Result caps: a tool result over the cap is shown head and tail, deterministically.

* every recipe: the head and the tail each get half the cap's bytes (three per token), cut at
  character boundaries, with a marker saying about how many tokens were left out;
* named cuts (v17): the head and the tail are whole lines and the marker names the lines left
  out: an fs-read's file lines, counted from 1 or from a ranged read's ``[lines A-B of N]`` header
  (or the result's recorded range), so that the fs-read bringing them back can be written from it;
  any other result's own lines; a result with no line end to cut at keeps the plain marker;
* wide reads (v19): an fs-read's result, ranged or not, is allowed twice the cap.
"""

from __future__ import annotations

import re

from nodwyn.window.estimate import BYTES_PER_TOKEN, _tokens_of_bytes

_FS_READ = "fs-read"
_RANGE_HEADER = re.compile(r"\[lines (\d+)-(\d+) of (\d+)\]")


def _is_fs_read(name: str, has_range: bool) -> bool:
    return name == _FS_READ or has_range


def _cap_for(cap_tokens: int, *, fs_read: bool, wide_reads: bool) -> int:
    return cap_tokens * 2 if fs_read and wide_reads else cap_tokens


def _plain(data: bytes, head_budget: int, tail_budget: int) -> str:
    head = data[:head_budget].decode("utf-8", "ignore")
    tail = data[len(data) - tail_budget :].decode("utf-8", "ignore")
    omitted = len(data) - len(head.encode()) - len(tail.encode())
    return f"{head}\n[... about {_tokens_of_bytes(omitted)} tokens omitted ...]\n{tail}"


def _first_line_number(lines: list[str], fs_read: bool, range_start: int | None) -> tuple[int, int]:
    """(index of the first counted line, its number)."""
    if fs_read and lines:
        header = _RANGE_HEADER.fullmatch(lines[0].rstrip("\n"))
        if header is not None:
            return 1, int(header.group(1))
        if range_start is not None:
            return 0, range_start
    return 0, 1


def _cap_text(
    text: str,
    cap_tokens: int,
    *,
    named: bool,
    fs_read: bool = False,
    range_start: int | None = None,
) -> str:
    """``text`` if it fits ``cap_tokens``, else its head and tail around an omission marker."""
    data = text.encode()
    budget = cap_tokens * BYTES_PER_TOKEN
    if len(data) <= budget:
        return text
    head_budget = budget // 2
    tail_budget = budget - head_budget
    if not named:
        return _plain(data, head_budget, tail_budget)
    lines = text.splitlines(keepends=True)
    sizes = [len(line.encode()) for line in lines]
    head_n, used = 0, 0
    while head_n < len(lines) and lines[head_n].endswith("\n") and used + sizes[head_n] <= head_budget:
        used += sizes[head_n]
        head_n += 1
    tail_n, used = 0, 0
    while tail_n < len(lines) - head_n - 1 and used + sizes[len(lines) - 1 - tail_n] <= tail_budget:
        used += sizes[len(lines) - 1 - tail_n]
        tail_n += 1
    if head_n == 0 or tail_n == 0 or head_n + tail_n >= len(lines):
        return _plain(data, head_budget, tail_budget)
    first_index, first_number = _first_line_number(lines, fs_read, range_start)
    if head_n <= first_index:
        return _plain(data, head_budget, tail_budget)
    a = first_number + head_n - first_index
    b = first_number + (len(lines) - tail_n - 1) - first_index
    omitted = sum(sizes[head_n : len(lines) - tail_n])
    if fs_read:
        marker = (
            f"[... file lines {a}-{b} omitted (about {_tokens_of_bytes(omitted)} tokens); "
            f"fs-read lines {a}-{b} to see them ...]\n"
        )
    else:
        marker = (
            f"[... lines {a}-{b} of this result omitted (about {_tokens_of_bytes(omitted)} tokens) ...]\n"
        )
    return "".join(lines[:head_n]) + marker + "".join(lines[len(lines) - tail_n :])
