"""Where two canonical requests first differ: a byte offset and the JSON path at it."""

from __future__ import annotations

from typing import Any

import orjson

from nodwyn.stats import common_bytes


def first_byte(a: bytes, b: bytes) -> int | None:
    """The offset of the first byte where ``a`` and ``b`` differ (``None`` when equal)."""
    return None if a == b else common_bytes(a, b)


def first_path(a: Any, b: Any, path: str = "$") -> str | None:
    """The JSON path of the first difference in canonical order (``None`` when equal)."""
    if type(a) is not type(b):
        return path
    if isinstance(a, dict):
        keys = sorted(set(a) | set(b), key=lambda k: k.encode("utf-16-be"))  # canonical order
        for k in keys:
            if k not in a or k not in b:
                return f"{path}.{k}"
            p = first_path(a[k], b[k], f"{path}.{k}")
            if p is not None:
                return p
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            p = first_path(x, y, f"{path}[{i}]")
            if p is not None:
                return p
        return None if len(a) == len(b) else f"{path}[{min(len(a), len(b))}]"
    return None if a == b else path


def describe(rebuilt: bytes, other: bytes) -> str:
    """``byte N (path)`` of the first difference between two canonical requests."""
    pos = first_byte(rebuilt, other)
    if pos is None:
        return "no byte differs"
    try:
        path = first_path(orjson.loads(rebuilt), orjson.loads(other))
    except orjson.JSONDecodeError:
        path = None
    return f"byte {pos}" + (f" ({path})" if path else "")
