"""Reading a workload file as JSON, with errors that name the file and the field.

Every source file is read through ``read_source``: regular files only (a FIFO would hang the
import, a link to ``/dev/zero`` would fill memory), at most ``MAX_SOURCE_BYTES``, and every JSON
value nested at most ``MAX_DEPTH`` deep (deeper ones would end a later reader in a RecursionError);
each refusal is one ``ImportFormatError`` naming the file (ADR 0333).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Final

import orjson

from nodwyn.errors import ImportFormatError
from nodwyn.values import fields

MAX_SOURCE_BYTES: Final = 1 << 30  # one source file, read whole
MAX_DEPTH: Final = 128  # nesting of one JSON value (a tool call's input is a few levels deep)
_KINDS: Final = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


def _not_regular(path: Path, mode: int) -> ImportFormatError:
    what = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return ImportFormatError(
        f"{path}: {what}, not a regular file; nodwyn imports only regular files (copy the run into one)"
    )


def read_source(path: Path, limit: int = MAX_SOURCE_BYTES, *, head: bool = False) -> bytes:
    """The bytes of the regular file at ``path`` (a link is followed to what it names), at most
    ``limit`` of them; with ``head`` the first ``limit`` bytes, else a larger file is refused."""
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once (and is refused below)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(path, info.st_mode)
        if info.st_size > limit and not head:
            raise _too_big(path, limit)
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 24, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if size > limit:
        if not head:
            raise _too_big(path, limit)  # it grew while being read
        data = data[:limit]
    return data


def _too_big(path: Path, limit: int) -> ImportFormatError:
    return ImportFormatError(
        f"{path}: larger than {limit >> 20} MiB, more than nodwyn imports from one file; "
        "split the run or import a copy of its part"
    )


def check_depth(value: Any, where: str) -> Any:
    """``value`` when no container in it is nested deeper than ``MAX_DEPTH``."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ImportFormatError(
                f"{where}: a value nested more than {MAX_DEPTH} deep; nodwyn imports at most "
                f"{MAX_DEPTH} levels (is the file a run, unaltered?)"
            )
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item if isinstance(v, dict | list))
    return value


def _parse(raw: bytes, where: str) -> Any:
    value = orjson.loads(raw)
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH:  # only then can it be nested that deep
        check_depth(value, where)
    return value


def read_json(path: Path) -> Any:
    raw = read_source(path)
    try:
        return _parse(raw, str(path))
    except orjson.JSONDecodeError as exc:
        raise ImportFormatError(f"{path}: not JSON ({exc}); is it a complete copy of the run?") from None


def field(obj: Any, key: str, typ: type | tuple[type, ...], where: str) -> Any:
    """``obj[key]``, checked to be of ``typ`` by the one field reader (``values.fields``); an
    ``ImportFormatError`` naming ``where.key`` otherwise."""
    return fields.field(obj, key, typ, where, error=ImportFormatError)


def text_of(content: Any, where: str) -> str:
    """A chat message's content as text: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for i, part in enumerate(content):
            if not isinstance(part, dict) or not isinstance(part.get("text", ""), str):
                raise ImportFormatError(f"{where}[{i}]: expected a text part, found {str(part)[:60]!r}")
            out.append(part.get("text", ""))
        return "".join(out)
    raise ImportFormatError(f"{where}: expected text or a list of parts, found {type(content).__name__}")


def read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """The JSON value of each non-blank line of ``path`` with its line number (from 1); a line
    that is not JSON (a truncated copy ends in one) is an error naming the file and line."""
    data = read_source(path)
    out: list[tuple[int, Any]] = []
    for n, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            out.append((n, _parse(line, f"{path}:{n}")))
        except orjson.JSONDecodeError as exc:
            cut = " (the file ends inside it: a truncated copy?)" if n >= data.count(b"\n") else ""
            raise ImportFormatError(f"{path}:{n}: not a JSON line ({exc}){cut}") from None
    if not out:
        raise ImportFormatError(f"{path}: no lines; is it a complete copy of the session file?")
    return out
