"""Editing a session's log.jsonl behind the log's back, to make damaged and legacy logs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from nodwyn.log import Store

Line = dict[str, Any]


def log_path(store: Store, sid: str) -> Path:
    return store.sessions / sid / "log.jsonl"


def read_lines(store: Store, sid: str) -> list[Line]:
    return [orjson.loads(line) for line in log_path(store, sid).read_bytes().splitlines()]


def write_raw(store: Store, sid: str, raw: bytes) -> None:
    """Replace the log's bytes and drop its index (the log rebuilds it)."""
    log_path(store, sid).write_bytes(raw)
    index = store.sessions / sid / "index.bin"
    if index.exists():
        index.unlink()


def rewrite(store: Store, sid: str, edit: Callable[[list[Line]], list[Line]]) -> None:
    lines = edit(read_lines(store, sid))
    write_raw(store, sid, b"".join(orjson.dumps(line) + b"\n" for line in lines))


def seq_of(lines: list[Line], kind: str, nth: int = 0) -> int:
    return int([line for line in lines if line["kind"] == kind][nth]["seq"])
