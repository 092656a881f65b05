"""File tools: fs-read, fs-list, fs-grep, fs-write, fs-edit. Every path is confined to the workspace."""

from __future__ import annotations

import contextlib
import fnmatch
import io
import os
import re
import stat
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

from nodwyn.agent.tools import view
from nodwyn.agent.tools.base import BYTES_PER_TOKEN, Outcome, ToolContext, declined, fail, tool
from nodwyn.agent.tools.deadline import Deadline
from nodwyn.agent.tools.edit import apply_edit, loose_match
from nodwyn.agent.tools.near import file_lines, not_found
from nodwyn.agent.tools.paths import Location, kind_of, locate, open_entry, write_entry
from nodwyn.agent.tools.pattern import Pattern, compile_pattern, file_filter
from nodwyn.agent.tools.walk import MAX_DEPTH, Walked, walk_files
from nodwyn.errors import ToolError
from nodwyn.values.events import FileRange
from nodwyn.values.request import BLOCK_KEY

_SNIFF = 8192
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".venv", "node_modules", "__pycache__", ".nodwyn"})
MAX_LIST = 500
MAX_MATCHES = 200
MAX_GREP_FILE = 4 * 1024 * 1024
MAX_EDIT_FILE = 64 * 1024 * 1024  # fs-edit holds the file in memory (twice, briefly)


def _is_binary(f: BinaryIO) -> bool:
    """Whether an open file looks binary (a NUL byte or invalid UTF-8 in its first 8 KiB); the file
    is left at its start."""
    head = f.read(_SNIFF)
    f.seek(0)
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by the sniff window is still text.
        return exc.start < len(head) - 4
    return False


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} bytes"


def parse_lines(raw: str) -> tuple[int, int | None]:
    """``"A-B"`` (1-based, inclusive), ``"A-"`` (to the end) or ``"A"`` (one line)."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d*)\s*)?", raw)
    if not m:
        raise ToolError(f'lines {raw!r} is not a range; use "A-B" with 1-based line numbers, e.g. "10-40"')
    start = int(m.group(1))
    end = None if m.group(2) in ("", None) and "-" in raw else int(m.group(2) or start)
    if start < 1 or (end is not None and end < start):
        raise ToolError(f'lines {raw!r} is empty or starts before line 1; use "A-B" with 1 <= A <= B')
    return start, end


@contextlib.contextmanager
def _open_text(ctx: ToolContext, raw: object) -> Iterator[tuple[BinaryIO | None, os.stat_result, Location]]:
    """The located entry opened for reading (``None`` for a directory), its stat and location."""
    with locate(ctx.workspace, raw, protected=ctx.protected) as loc:
        fd, st = open_entry(loc, raw)
        if stat.S_ISDIR(st.st_mode):
            os.close(fd)
            yield None, st, loc
            return
        with os.fdopen(fd, "rb") as f:
            yield f, st, loc


def _read(args: dict[str, Any], ctx: ToolContext) -> Outcome:
    deadline = Deadline("fs-read", ctx.tool_timeout)
    with _open_text(ctx, args["path"]) as (f, st, loc):
        name = loc.shown
        if f is None:
            return fail(f"{name} is a directory; list it with fs-list")
        size = st.st_size
        if _is_binary(f):
            return fail(f"{name} is a binary file ({_size(size)}); fs-read shows text files only")
        lines_arg = args.get("lines")
        if lines_arg is None:
            if size > ctx.max_file_bytes:
                total = _count_lines(f, deadline)
                per = max(1, size // max(total, 1))
                fit = max(1, ctx.read_budget_tokens * BYTES_PER_TOKEN // per)
                return fail(
                    f"{name} is {_size(size)} ({total} lines), too large to read whole; read a range with "
                    f'lines, e.g. "1-{min(total, fit)}" (about {fit} lines fit in one read)'
                )
            text = view.text(f, ctx.known, deadline, ctx.max_file_bytes + 1)
            total = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
            return Outcome(text=text, range=FileRange(start=1, end=total, total=total))
        start, end = parse_lines(str(lines_arg))
        budget = ctx.read_budget_tokens * BYTES_PER_TOKEN
        shown_lines: list[str] = []
        used = 0
        total = 0
        last = start - 1
        done = False  # past the range, or past the cap (the rest is another read): only count the rest
        for number, line in enumerate(view.lines(f, ctx.known, deadline), start=1):
            total = number
            if done or number < start:
                continue
            size = len(line.encode("utf-8"))
            if (end is not None and number > end) or (shown_lines and used + size > budget):
                done = True
                continue
            shown_lines.append(line)
            used += size
            last = number
    if start > total:
        return fail(f"{name} has {total} lines; lines {start}- is past its end")
    text = f"[lines {start}-{last} of {total}]\n" + "".join(shown_lines)
    return Outcome(text=text, range=FileRange(start=start, end=last, total=total))


def _count_lines(f: BinaryIO, deadline: Deadline) -> int:
    """The lines left in ``f`` (a final line may lack its newline)."""
    count = 0
    last = b"\n"
    while chunk := f.read(1 << 20):
        deadline.check()
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (0 if last == b"\n" else 1)


def _list(args: dict[str, Any], ctx: ToolContext) -> Outcome:
    raw = args.get("path") or "."  # an empty path, as small models write one, is the root
    with locate(ctx.workspace, raw, protected=ctx.protected) as loc:
        fd, st = open_entry(loc, raw)
        name = loc.shown
        if not stat.S_ISDIR(st.st_mode):
            os.close(fd)
            return fail(f"{name} is not a directory; read a file with fs-read")
        try:
            with os.scandir(fd) as it:
                entries = sorted(it, key=lambda e: e.name)
            rows = [_row(fd, entry) for entry in entries[:MAX_LIST]]
        finally:
            os.close(fd)
    if len(entries) > MAX_LIST:
        rows.append(f"[{len(entries) - MAX_LIST} more entries not shown]")
    return Outcome(text="\n".join(rows) if rows else f"{name} is empty")


def _row(dir_fd: int, entry: os.DirEntry[str]) -> str:
    """One fs-list line. Nothing is followed: a symlink shows where it points, never the size or
    kind of what it points to (which may be outside the workspace)."""
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return f"{entry.name}  (unreadable)"
    if stat.S_ISDIR(st.st_mode):
        return entry.name + "/"
    if stat.S_ISREG(st.st_mode):
        return f"{entry.name}  ({_size(st.st_size)})"
    if stat.S_ISLNK(st.st_mode):
        try:
            return f"{entry.name} -> {os.readlink(entry.name, dir_fd=dir_fd)}  (symlink)"
        except OSError:
            return f"{entry.name}  (symlink)"
    return f"{entry.name}  ({kind_of(st.st_mode)})"


def _grep_file(
    f: BinaryIO,
    rel: str,
    regex: Pattern,
    whole: Pattern | None,
    matches: list[str],
    deadline: Deadline,
    ctx: ToolContext,
) -> int:
    """Append ``rel``'s matching lines to ``matches`` (up to MAX_MATCHES); the matches past it.

    Lines are the file's redacted view (``view``): what matches, and so which calls match, never
    depends on a held credential. A line matches when ``regex`` finds a match in it (without its
    newline). With ``whole`` (the pattern with ``^``/``$`` at line edges), one pass over the file
    finds where matches can be; a line with a match of its own lies within the span of one of the
    whole-file matches, so only the lines those spans touch are tried one by one."""
    read = view.text if ctx.views is None else ctx.views.text
    text = read(f, ctx.known, deadline, MAX_GREP_FILE + 1)
    lines = file_lines(text) if text else []
    if whole is None:
        candidates: Iterable[int] = range(len(lines))
    else:
        candidates = _candidate_lines(text, whole, deadline)
    more = 0
    for k, index in enumerate(candidates):
        if k % 1024 == 1023:
            deadline.check()
        if index >= len(lines):  # a match of the empty end after the last newline: no line
            break
        line = lines[index]
        if regex.search(line):
            if len(matches) < MAX_MATCHES:
                matches.append(f"{rel}:{index + 1}: {line[:300]}")
            else:
                more += 1
    return more


def _candidate_lines(text: str, whole: Pattern, deadline: Deadline) -> list[int]:
    """The (0-based) lines touched by the whole-file matches of ``whole``, in order, once each."""
    found: list[int] = []
    cursor = 0  # text offset whose line number is ``line``
    line = 0
    for n, m in enumerate(whole.finditer(text)):
        if n % 1024 == 1023:
            deadline.check()
        start, end = m.start(), m.end()
        line += text.count("\n", cursor, start)
        cursor = start
        last = line + text.count("\n", start, end)
        first = line if not found or found[-1] < line else found[-1] + 1
        found.extend(range(first, last + 1))
        line, cursor = last, end
    return found


def _grep_at(dir_fd: int, name: str, glob: str | None) -> BinaryIO | None:
    """A regular text file of the walk opened for grep, or None to skip it (a link, a FIFO, too
    big, binary, unreadable). Opened with O_NOFOLLOW|O_NONBLOCK relative to its directory."""
    if glob and not fnmatch.fnmatch(name, glob):
        return None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_GREP_FILE:
        os.close(fd)
        return None
    os.set_blocking(fd, True)
    f = os.fdopen(fd, "rb")
    if _is_binary(f):
        f.close()
        return None
    return f


def _grep(args: dict[str, Any], ctx: ToolContext) -> Outcome:
    deadline = Deadline("fs-grep", ctx.tool_timeout)
    regex = compile_pattern(args["pattern"])
    whole = file_filter(args["pattern"])
    raw = args.get("path") or "."  # an empty path, as small models write one, is the root
    glob = args.get("glob") or None
    matches: list[str] = []
    more = 0
    walked = Walked()
    with locate(ctx.workspace, raw, protected=ctx.protected) as loc:
        where = loc.shown
        fd, st = open_entry(loc, raw)
        try:
            if not stat.S_ISDIR(st.st_mode):
                with os.fdopen(os.dup(fd), "rb") as f:
                    if not _is_binary(f):
                        more += _grep_file(f, where, regex, whole, matches, deadline, ctx)
            else:
                prefix = "" if where == "." else where + "/"
                found = walk_files(
                    fd,
                    prefix,
                    workspace=ctx.workspace.resolve(),
                    skip=_SKIP_DIRS,
                    protected=ctx.protected,
                    deadline=deadline,
                    walked=walked,
                )
                for dfd, rel, file in found:
                    opened = _grep_at(dfd, file, glob)
                    if opened is not None:
                        with opened:
                            more += _grep_file(opened, rel, regex, whole, matches, deadline, ctx)
        finally:
            os.close(fd)
    if not matches:
        matches.append(f"no match for {args['pattern']!r} under {where}")
    elif more:
        matches.append(f"[{more} more matches not shown; narrow the pattern or the path]")
    return Outcome(text="\n".join([*matches, *_left_out(walked)]))


def _left_out(walked: Walked) -> list[str]:
    notes = []
    if walked.too_deep:
        notes.append(
            f"[{walked.too_deep} directories more than {MAX_DEPTH} levels down not searched; "
            "search from deeper in with path]"
        )
    if walked.protected:
        notes.append(f"[not searched: {', '.join(walked.protected[:5])} (nodwyn's own files)]")
    return notes


def _write(args: dict[str, Any], ctx: ToolContext) -> Outcome:
    raw = args["path"]
    content: str = args["content"]
    data = content.encode("utf-8")
    with locate(ctx.workspace, raw, must_exist=False, protected=ctx.protected) as loc:
        name = loc.shown
        exists = loc.exists
        if exists:
            st = os.stat(loc.name, dir_fd=loc.dir_fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                return fail(f"{name} is a directory; give a file path")
            if not stat.S_ISREG(st.st_mode):
                return fail(f"{name} is a {kind_of(st.st_mode)}; fs-write writes regular files only")
    verb = "overwrite" if exists else "create"
    if not ctx.approve("fs-write", f"{verb} {name} ({len(data)} bytes)"):
        return declined("fs-write", f"{verb} {name}")
    # Everything is resolved again after the prompt: what was checked before may have been swapped.
    with locate(ctx.workspace, raw, must_exist=False, make_dirs=True, protected=ctx.protected) as loc:
        if loc.shown != name:
            return fail(
                f"{name} changed while waiting for approval (it now leads to {loc.shown}); not written"
            )
        write_entry(loc, data)
    return Outcome(text=f"wrote {name}: {len(data)} bytes, {content.count(chr(10))} lines")


def _read_whole(ctx: ToolContext, raw: object) -> tuple[bytes | None, str]:
    with _open_text(ctx, raw) as (f, st, loc):
        name = loc.shown
        if f is None or _is_binary(f):
            return None, name
        if st.st_size > MAX_EDIT_FILE:
            raise ToolError(
                f"{name} is {_size(st.st_size)}; fs-edit edits files up to {_size(MAX_EDIT_FILE)}"
            )
        return f.read(), name


def _edit(args: dict[str, Any], ctx: ToolContext) -> Outcome:
    deadline = Deadline("fs-edit", ctx.tool_timeout)
    data, name = _read_whole(ctx, args["path"])
    if data is None:
        return fail(f"{name} is not a text file; fs-edit edits text files")
    old: str = args["old"]
    new: str = args["new"]
    if old == "":
        return fail("fs-edit: old is empty; give the exact text to replace")
    text = data.decode("utf-8", errors="replace")
    seen = view.text(io.BytesIO(data), ctx.known, deadline)  # found, counted and shown in the view
    count, loose = seen.count(old), ""
    if count == 0 and (piece := loose_match(seen, old)) is not None:
        old, count, loose = piece, 1, " (its old lines matched with blank lines and trailing spaces ignored)"
    if count == 0:
        return fail(not_found(name, seen, old, deadline))
    if count > 1:
        return fail(_many(name, seen, old, count))
    result = apply_edit(text, seen, old, new, known=ctx.known, deadline=deadline, name=name)
    if not ctx.approve("fs-edit", f"edit {name}"):
        return declined("fs-edit", f"change {name}")
    # Resolve and read again after the prompt: a file swapped or changed meanwhile is not written.
    with _open_text(ctx, args["path"]) as (f, _, loc):
        if loc.shown != name or (None if f is None else f.read()) != data:
            return fail(
                f"fs-edit: {name} changed while waiting for approval; read it again and redo the edit"
            )
        write_entry(loc, result.encode("utf-8"))
    return Outcome(text=f"edited {name} at line {seen.count(chr(10), 0, seen.index(old)) + 1}{loose}")


SHOWN_MATCHES = 5  # lines shown for an old text found more than once


def _many(name: str, seen: str, old: str, count: int) -> str:
    """fs-edit's answer to an ``old`` found ``count`` times: where, and the lines it is on (at most
    SHOWN_MATCHES), so the next try can take one whole line (ADR 0442)."""
    file_lines = seen.split("\n")
    numbers: list[int] = []
    at = 0
    for _ in range(count):
        at = seen.index(old, at)
        n = seen.count("\n", 0, at) + 1
        if n not in numbers:
            numbers.append(n)
        at += len(old)
    shown = "\n".join(f"{n}: {file_lines[n - 1]}" for n in numbers[:SHOWN_MATCHES])
    return (
        f"fs-edit: the old text occurs {count} times in {name} (lines {', '.join(map(str, numbers))}), "
        f"so nothing was changed; make old one of these lines whole (or more of it) so it matches "
        f"once, and edit each place in its own call:\n{shown}"
    )


_PATH = {"type": "string", "description": "a path relative to the workspace"}
_LINES = {"type": "string", "description": 'a 1-based range "A-B", e.g. "10-40"'}
_PATTERN = {"type": "string", "description": "a Python regular expression"}
_GLOB = {"type": "string", "description": 'only files whose name matches, e.g. "*.py"'}
_TEXT = {"type": "string"}
_READ = "Read a text file, whole or a range of lines. A ranged read starts with [lines A-B of N]."

FS_TOOLS = (
    tool("fs-read", _READ, {"path": _PATH, "lines": _LINES}, ["path"], _read),
    tool("fs-list", "List a directory of the workspace.", {"path": _PATH}, [], _list),
    tool(
        "fs-grep",
        "Search files for a regular expression; prints path:line: text.",
        {"pattern": _PATTERN, "path": _PATH, "glob": _GLOB},
        ["pattern"],
        _grep,
    ),
    tool(
        "fs-write",
        "Create or overwrite a file with the given content.",
        {"path": _PATH, "content": _TEXT},
        ["path", "content"],
        _write,
        mutating=True,
    ),
    tool(
        "fs-edit",
        "Replace one exact occurrence of old with new in a file.",
        {"path": _PATH, "old": _TEXT, "new": _TEXT},
        ["path", "old", "new"],
        _edit,
        mutating=True,
    ),
)


# The edit tools as a prompt format with edit blocks offers them (``dialects.local.blocks``, ADR
# 0440): the same tools, their text arguments marked to be written as plain text after the call.
BLOCK_EDIT_TOOLS = (
    tool(
        "fs-write",
        "Create or overwrite a file. The call gives only the path; right after the call, write "
        "the file's whole new content in a fenced code block, ``` on a line before and after it.",
        {"path": _PATH, "content": {"type": "string", BLOCK_KEY: "fence"}},
        ["path", "content"],
        _write,
        mutating=True,
    ),
    tool(
        "fs-edit",
        "Replace one exact piece of a file. The call gives only the path. Right after the call, "
        "write a line <<<<<<< SEARCH, then the lines to change copied exactly from the file, "
        "then a line =======, then the lines to put instead, then a line >>>>>>> REPLACE.",
        {
            "path": _PATH,
            "old": {"type": "string", BLOCK_KEY: "search"},
            "new": {"type": "string", BLOCK_KEY: "replace"},
        },
        ["path", "old", "new"],
        _edit,
        mutating=True,
    ),
)
