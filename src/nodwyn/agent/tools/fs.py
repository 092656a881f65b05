"""File tools: fs-read, fs-list, fs-grep, fs-write, fs-edit. Every path is confined to the workspace."""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path
from typing import Any, BinaryIO

from nodwyn.agent.tools.base import BYTES_PER_TOKEN, Outcome, Tool, ToolContext, declined, fail
from nodwyn.agent.tools.paths import confine, shown
from nodwyn.errors import ToolError
from nodwyn.values.events import FileRange
from nodwyn.values.request import ToolSpec

_SNIFF = 8192
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".venv", "node_modules", "__pycache__", ".nodwyn"})
MAX_LIST = 500
MAX_MATCHES = 200
MAX_GREP_FILE = 4 * 1024 * 1024


def _is_binary(path: Path) -> bool:
    with path.open("rb") as f:
        head = f.read(_SNIFF)
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


def _read(args: dict[str, Any], ctx: ToolContext) -> Outcome:
    path = confine(ctx.workspace, args["path"])
    name = shown(ctx.workspace, path)
    if path.is_dir():
        return fail(f"{name} is a directory; list it with fs-list")
    size = path.stat().st_size
    if _is_binary(path):
        return fail(f"{name} is a binary file ({_size(size)}); fs-read shows text files only")
    lines_arg = args.get("lines")
    if lines_arg is None:
        if size > ctx.max_file_bytes:
            with path.open("rb") as f:
                total = _count_lines(f)
            per = max(1, size // max(total, 1))
            fit = max(1, ctx.read_budget_tokens * BYTES_PER_TOKEN // per)
            return fail(
                f"{name} is {_size(size)} ({total} lines), too large to read whole; read a range with "
                f'lines, e.g. "1-{min(total, fit)}" (about {fit} lines fit in one read)'
            )
        text = path.read_bytes().decode("utf-8", errors="replace")
        total = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        return Outcome(text=text, range=FileRange(start=1, end=total, total=total))
    start, end = parse_lines(str(lines_arg))
    budget = ctx.read_budget_tokens * BYTES_PER_TOKEN
    shown_lines: list[str] = []
    used = 0
    total = 0
    last = start - 1
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            total = number
            if number < start:
                continue
            if (end is not None and number > end) or (shown_lines and used + len(raw) > budget):
                # past the range, or past the cap (the rest is another read): only count the rest
                total += _count_lines(f)
                break
            shown_lines.append(raw.decode("utf-8", errors="replace"))
            used += len(raw)
            last = number
    if start > total:
        return fail(f"{name} has {total} lines; lines {start}- is past its end")
    header = f"[lines {start}-{last} of {total}]\n"
    body = "".join(shown_lines)
    return Outcome(text=header + body, range=FileRange(start=start, end=last, total=total))


def _count_lines(f: BinaryIO) -> int:
    """The lines left in ``f`` (a final line may lack its newline)."""
    count = 0
    last = b"\n"
    while chunk := f.read(1 << 20):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (0 if last == b"\n" else 1)


def _list(args: dict[str, Any], ctx: ToolContext) -> Outcome:
    path = confine(ctx.workspace, args.get("path", "."))
    name = shown(ctx.workspace, path)
    if not path.is_dir():
        return fail(f"{name} is not a directory; read a file with fs-read")
    rows: list[str] = []
    entries = sorted(os.scandir(path), key=lambda e: e.name)
    for entry in entries[:MAX_LIST]:
        if entry.is_dir():
            rows.append(entry.name + "/")
        else:
            try:
                rows.append(f"{entry.name}  ({_size(entry.stat().st_size)})")
            except OSError:
                rows.append(f"{entry.name}  (unreadable)")
    if len(entries) > MAX_LIST:
        rows.append(f"[{len(entries) - MAX_LIST} more entries not shown]")
    return Outcome(text="\n".join(rows) if rows else f"{name} is empty")


def _walk(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        found.extend(Path(dirpath) / f for f in sorted(filenames))
    return found


def _grep(args: dict[str, Any], ctx: ToolContext) -> Outcome:
    try:
        regex = re.compile(args["pattern"])
    except re.error as exc:
        return fail(f"fs-grep: pattern {args['pattern']!r} is not a valid regular expression ({exc})")
    root = confine(ctx.workspace, args.get("path", "."))
    glob = args.get("glob")
    matches: list[str] = []
    more = 0
    for file in _walk(root):
        if glob and not fnmatch.fnmatch(file.name, glob):
            continue
        if file.is_symlink() or not file.is_file() or file.stat().st_size > MAX_GREP_FILE or _is_binary(file):
            continue
        rel = shown(ctx.workspace, file)
        with file.open("rb") as f:
            for number, raw in enumerate(f, start=1):
                line = raw.decode("utf-8", errors="replace").rstrip("\n")
                if regex.search(line):
                    if len(matches) < MAX_MATCHES:
                        matches.append(f"{rel}:{number}: {line[:300]}")
                    else:
                        more += 1
    if not matches:
        return Outcome(text=f"no match for {args['pattern']!r} under {shown(ctx.workspace, root)}")
    if more:
        matches.append(f"[{more} more matches not shown; narrow the pattern or the path]")
    return Outcome(text="\n".join(matches))


def _write_file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.nodwyn-tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _write(args: dict[str, Any], ctx: ToolContext) -> Outcome:
    path = confine(ctx.workspace, args["path"], must_exist=False)
    name = shown(ctx.workspace, path)
    if path.is_dir():
        return fail(f"{name} is a directory; give a file path")
    content: str = args["content"]
    verb = "overwrite" if path.exists() else "create"
    if not ctx.approve("fs-write", f"{verb} {name} ({len(content.encode())} bytes)"):
        return declined("fs-write", f"{verb} {name}")
    _write_file(path, content)
    return Outcome(text=f"wrote {name}: {len(content.encode())} bytes, {content.count(chr(10))} lines")


def _edit(args: dict[str, Any], ctx: ToolContext) -> Outcome:
    path = confine(ctx.workspace, args["path"])
    name = shown(ctx.workspace, path)
    if path.is_dir() or _is_binary(path):
        return fail(f"{name} is not a text file; fs-edit edits text files")
    old: str = args["old"]
    new: str = args["new"]
    if old == "":
        return fail("fs-edit: old is empty; give the exact text to replace")
    text = path.read_text(encoding="utf-8", errors="replace")
    count = text.count(old)
    if count == 0:
        return fail(f"fs-edit: the old text was not found in {name}; read the file and copy the exact text")
    if count > 1:
        lines, at = [], 0
        for _ in range(count):
            at = text.index(old, at)
            lines.append(str(text.count("\n", 0, at) + 1))
            at += len(old)
        return fail(
            f"fs-edit: the old text occurs {count} times in {name} (lines {', '.join(lines)}); "
            "include more surrounding text so it matches once"
        )
    if not ctx.approve("fs-edit", f"edit {name}"):
        return declined("fs-edit", f"change {name}")
    at = text.index(old)
    _write_file(path, text.replace(old, new, 1))
    return Outcome(text=f"edited {name} at line {text.count(chr(10), 0, at) + 1}")


def _spec(name: str, description: str, props: dict[str, Any], required: list[str]) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": props,
            "required": required,
            "additionalProperties": False,
        },
    )


_PATH = {"type": "string", "description": "a path relative to the workspace"}

FS_TOOLS = (
    Tool(
        spec=_spec(
            "fs-read",
            "Read a text file, whole or a range of lines. A ranged read starts with [lines A-B of N].",
            {
                "path": _PATH,
                "lines": {"type": "string", "description": 'a 1-based range "A-B", e.g. "10-40"'},
            },
            ["path"],
        ),
        run=_read,
    ),
    Tool(
        spec=_spec("fs-list", "List a directory of the workspace.", {"path": _PATH}, []),
        run=_list,
    ),
    Tool(
        spec=_spec(
            "fs-grep",
            "Search files for a regular expression; prints path:line: text.",
            {
                "pattern": {"type": "string", "description": "a Python regular expression"},
                "path": _PATH,
                "glob": {"type": "string", "description": 'only files whose name matches, e.g. "*.py"'},
            },
            ["pattern"],
        ),
        run=_grep,
    ),
    Tool(
        spec=_spec(
            "fs-write",
            "Create or overwrite a file with the given content.",
            {"path": _PATH, "content": {"type": "string"}},
            ["path", "content"],
        ),
        run=_write,
        mutating=True,
    ),
    Tool(
        spec=_spec(
            "fs-edit",
            "Replace one exact occurrence of old with new in a file.",
            {"path": _PATH, "old": {"type": "string"}, "new": {"type": "string"}},
            ["path", "old", "new"],
        ),
        run=_edit,
        mutating=True,
    ),
)
