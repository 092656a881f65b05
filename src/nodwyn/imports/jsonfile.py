"""Reading a workload file as JSON, with errors that name the file and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from nodwyn.errors import ImportFormatError
from nodwyn.values import fields


def read_json(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise ImportFormatError(f"{path}: not JSON ({exc}); is it a complete copy of the run?") from exc
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot read ({exc.strerror})") from exc


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


def trajectory_messages(path: Path, trajectory_format: str) -> list[Any]:
    """The ``messages`` of a mini-swe-agent trajectory file, checked to be of ``trajectory_format``."""
    doc = read_json(path)
    where = str(path)
    fmt = field(doc, "trajectory_format", str, where)
    if fmt != trajectory_format:
        raise ImportFormatError(f"{where}: trajectory_format {fmt!r} is not {trajectory_format!r}")
    messages: list[Any] = field(doc, "messages", list, where)
    return messages


def read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """The JSON value of each non-blank line of ``path`` with its line number (from 1); a line
    that is not JSON (a truncated copy ends in one) is an error naming the file and line."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot read ({exc.strerror})") from exc
    out: list[tuple[int, Any]] = []
    for n, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            out.append((n, orjson.loads(line)))
        except orjson.JSONDecodeError as exc:
            cut = " (the file ends inside it: a truncated copy?)" if n >= data.count(b"\n") else ""
            raise ImportFormatError(f"{path}:{n}: not a JSON line ({exc}){cut}") from exc
    if not out:
        raise ImportFormatError(f"{path}: no lines; is it a complete copy of the session file?")
    return out
