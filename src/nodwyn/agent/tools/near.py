"""What fs-edit shows when its old text is not in the file: the lines most like it (ADR 0296).

The file is cut into windows of as many lines as ``old`` has (blank lines at its ends left out).
A window whose text equals ``old`` but for whitespace (indentation, spaces, line ends) is named as
such; otherwise each window is scored against ``old`` with ``difflib.SequenceMatcher.ratio`` (each
line's surrounding whitespace left out) and the first best one is shown, with line numbers and a
line of context, when its score reaches ``THRESHOLD``. The search is bounded (``MAX_SEARCHED``,
``MAX_WORK``, the deadline) and so is what is shown (``MAX_SHOWN_LINES`` lines of at most
``MAX_LINE_CHARS`` characters).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher

from nodwyn.agent.tools.deadline import Deadline

# Measured by bench/edit_near.py (ADR 0296): 0.7 keeps about 9 in 10 one-word near misses and shows
# something for about 1 in 20 unrelated texts (difflib's and Aider's 0.6 shows 1 in 10).
THRESHOLD = 0.7
CONTEXT = 1  # lines shown before and after the region
MAX_SHOWN_LINES = 20
MAX_LINE_CHARS = 200
MAX_SEARCHED = 4 * 1024 * 1024  # a file longer than this (in characters) is not searched
MAX_WORK = 16_000_000  # nor one whose characters times old's lines exceed this
MAX_OLD_CHARS = 4096  # an old text longer than this is not searched for
MAX_COMPARED = 32  # windows compared in full at most (the best bounds first) ...
MAX_COMPARED_CHARS = 32 * 1024  # ... and fewer for a long old: at most this many of its characters


@dataclass(frozen=True, slots=True, kw_only=True)
class Near:
    """The region of a file most like an edit's old text."""

    first: int  # 0-based index of the region's first line
    count: int  # lines in the region
    score: float  # 1.0 for a whitespace-only difference
    whitespace_only: bool


def _collapsed(text: str) -> str:
    return " ".join(text.split())


def _wanted(old: str) -> list[str]:
    """old's lines, blank lines at either end left out."""
    lines = old.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def file_lines(text: str) -> list[str]:
    """A file's lines as fs-read and fs-grep number them (a final newline ends the last line)."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def nearest(text: str, old: str, deadline: Deadline, threshold: float = THRESHOLD) -> Near | None:
    """The region of ``text`` most like ``old``, or None when nothing reaches ``threshold``, the
    search would be too long (MAX_SEARCHED, MAX_WORK, MAX_OLD_CHARS) or the deadline passes."""
    want = _wanted(old)
    lines = file_lines(text)
    too_long = len(old) > MAX_OLD_CHARS or len(text) > MAX_SEARCHED or len(text) * len(want) > MAX_WORK
    if not want or not lines or too_long:
        return None
    n = min(len(want), len(lines))
    windows = range(len(lines) - n + 1)
    same = _whitespace_only(lines, _collapsed("\n".join(want)), n, windows, deadline)
    if same is not None:
        return Near(first=same, count=n, score=1.0, whitespace_only=True)
    target = "\n".join(line.strip() for line in want)
    return _most_similar(lines, target, n, deadline, threshold)


def _whitespace_only(lines: list[str], target: str, n: int, windows: range, deadline: Deadline) -> int | None:
    """The first window that holds ``target`` once whitespace is collapsed."""
    for i in windows:
        if i % 1024 == 1023 and deadline.remaining() <= 0:
            return None
        if target in _collapsed("\n".join(lines[i : i + n])):
            return i
    return None


def _most_similar(lines: list[str], target: str, n: int, deadline: Deadline, threshold: float) -> Near | None:
    """The best-scoring window (the first of equals), if it reaches ``threshold``. Windows are
    compared in the order of an upper bound of their score (``_bounds``), best first, and the
    comparing stops once no window left can beat the best found, or after MAX_COMPARED windows
    (fewer for a long ``old``, MAX_COMPARED_CHARS)."""
    bounds = _bounds(lines, target, n, deadline)
    if bounds is None:
        return None
    order = sorted((i for i, bound in enumerate(bounds) if bound >= threshold), key=lambda i: (-bounds[i], i))
    matcher = SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(target)
    best: Near | None = None
    for i in order[: min(MAX_COMPARED, 1 + MAX_COMPARED_CHARS // len(target))]:
        if best is not None and bounds[i] < best.score:
            break
        if deadline.remaining() <= 0:
            return None
        matcher.set_seq1("\n".join(line.strip() for line in lines[i : i + n]))
        score = matcher.ratio()
        if score >= threshold and (best is None or (score, -i) > (best.score, -best.first)):
            best = Near(first=i, count=n, score=score, whitespace_only=False)
    return best


def _bounds(lines: list[str], target: str, n: int, deadline: Deadline) -> list[float] | None:
    """Per window, ``quick_ratio`` against ``target`` (an upper bound of ``ratio``: the characters
    the two have in common, counted without order), kept up to date as the window slides by one
    line instead of counted afresh; None when the deadline passes."""
    want = Counter(target)
    stripped = [line.strip() for line in lines]
    have = Counter("\n".join(stripped[:n]))
    size = len("\n".join(stripped[:n]))
    bounds = []
    for i in range(len(stripped) - n + 1):
        if i:
            have.subtract(stripped[i - 1])
            have.update(stripped[i + n - 1])
            size += len(stripped[i + n - 1]) - len(stripped[i - 1])
        if i % 1024 == 1023 and deadline.remaining() <= 0:
            return None
        shared = sum(min(have[c], k) for c, k in want.items())
        bounds.append(2 * shared / (size + len(target)))
    return bounds


def shown(lines: list[str], near: Near) -> str:
    """The region with CONTEXT lines around it, numbered ``N | text``, at most MAX_SHOWN_LINES
    lines of at most MAX_LINE_CHARS characters; what is left out is named."""
    start = max(0, near.first - CONTEXT)
    end = min(len(lines), near.first + near.count + CONTEXT)
    last = min(end, start + MAX_SHOWN_LINES)
    width = len(str(last))
    rows = [_row(number, lines[number - 1], width) for number in range(start + 1, last + 1)]
    if last < end:
        rows.append(f'[lines {last + 1}-{end} not shown; read them with fs-read lines "{last + 1}-{end}"]')
    return "\n".join(rows)


def _row(number: int, line: str, width: int) -> str:
    if len(line) > MAX_LINE_CHARS:
        return f"{number:>{width}} | {line[:MAX_LINE_CHARS]} [line cut at {MAX_LINE_CHARS} characters]"
    return f"{number:>{width}} | {line}"


def not_found(name: str, text: str, old: str, deadline: Deadline) -> str:
    """fs-edit's message for an old text that is not in ``text`` (the file ``name``)."""
    near = nearest(text, old, deadline)
    if near is None:
        return f"fs-edit: the old text was not found in {name}; read the file and copy the exact text"
    one = near.count == 1
    where = f"line {near.first + 1}" if one else f"lines {near.first + 1}-{near.first + near.count}"
    if near.whitespace_only:
        verb = "differs" if one else "differ"
        what = f"{where} {verb} from it only in whitespace (indentation, spaces or line ends)"
    else:
        what = f"the most similar text is at {where}"
    return (
        f"fs-edit: the old text was not found in {name}; {what}. Copy the exact text, whitespace "
        "included, from the lines below into old (each shown as N | text, with a line of context; "
        "the number and ' | ' are not part of the text):\n" + shown(file_lines(text), near)
    )
