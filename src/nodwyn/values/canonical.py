"""Canonical JSON (RFC 8785, JCS) and its SHA-256.

We encode with orjson after ordering object keys by their UTF-16 code units, as JCS requires.
Where no key holds a character beyond U+FFFF, that order is the code points' order, which orjson's
own ``OPT_SORT_KEYS`` gives: a value of plain JSON types with such keys (nearly every request) is
checked by one walk that builds nothing and encoded by orjson in one call; anything else takes the
normalising walk, which orders such keys itself and names the path of what it refuses (ADR 0471).
For the values we hash (strings, integers, booleans, null, arrays, objects) this is byte-identical
to the ``rfc8785`` reference implementation (a hypothesis test proves it). Floats are refused:
JCS prints them by ECMAScript rules that no request of ours needs, and a tool schema that carries
one should spell it as an integer or a string.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from nodwyn.errors import CanonicalError

_MAX_SAFE = 2**53 - 1


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be")


def _normalise(value: Any, path: str) -> Any:
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            if not isinstance(k, str):
                raise CanonicalError(f"object key {k!r} at {path} is not a string")
            items.append((k, _normalise(v, f"{path}.{k}")))
        items.sort(key=lambda kv: _utf16_key(kv[0]))
        return dict(items)
    if isinstance(value, list | tuple):
        return [_normalise(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        if abs(value) > _MAX_SAFE:
            raise CanonicalError(
                f"integer {value} at {path} is beyond 2^53 and has no exact JCS form; send it as a string"
            )
        return value
    if isinstance(value, float):
        raise CanonicalError(
            f"float {value!r} at {path}: canonical requests carry no floats; use an integer or string"
        )
    raise CanonicalError(f"value of type {type(value).__name__} at {path} is not JSON")


def _plain(value: Any) -> bool:
    """Whether ``value`` is of exact JSON types only (no subclass), with integers within 2^53
    and string keys of the Basic Multilingual Plane only: then orjson's key order is JCS's."""
    stack = [value]
    pop, extend = stack.pop, stack.extend
    while stack:
        v = pop()
        t = type(v)
        if t is str or t is bool or v is None:
            continue
        if t is dict:
            for k in v:
                if type(k) is not str or (not k.isascii() and max(k) > "\uffff"):
                    return False
            extend(v.values())
        elif t is list or t is tuple:
            extend(v)
        elif t is int:
            if not -_MAX_SAFE <= v <= _MAX_SAFE:
                return False
        else:
            return False
    return True


def canonical_bytes(value: Any) -> bytes:
    """The JCS bytes of a JSON value (dicts, lists, str, int, bool, None)."""
    try:
        if _plain(value):
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        return orjson.dumps(_normalise(value, "$"))
    except orjson.JSONEncodeError as exc:  # lone surrogates and the like
        raise CanonicalError(f"value has no canonical JSON form: {exc}") from exc


def digest(value: Any) -> str:
    """``sha256:`` + hex SHA-256 of the canonical bytes."""
    return "sha256:" + hashlib.sha256(canonical_bytes(value)).hexdigest()
