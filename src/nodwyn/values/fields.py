"""Reading the fields of a JSON object: the one field reader (issue 22, ADR 0341).

A log payload (``values.events``), a value's JSON shape (``values.codec``), another agent's file
(``nodwyn.imports``) and a provider's reply (``dialects``) are all JSON read field by field, each
field declared once by the call that reads it (``r.get("text", str)``): its name, its JSON type,
whether it may be absent (a default) or null (``NULL`` among the types). Every reader checks the
same way: a boolean is never an integer unless the field takes booleans, a missing field and a
field of the wrong type name ``where.key``. Each caller passes its own error class (the log's
``CorruptLogError`` by default, ``ImportFormatError``, a dialect's ``DecodeError`` maker), so the
message is its layer's and the check is one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from nodwyn.errors import CorruptLogError, NodwynError

NULL: Final = type(None)
Types = type | tuple[type, ...]
Refuse = Callable[[str], NodwynError]  # an error class, or a function making the caller's error


_JSON_WORDS: Final = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    list: "an array",
    dict: "an object",
    NULL: "null",
}


def type_name(typ: Types, json_words: bool = False) -> str:
    """``int``, ``str or null`` (or in JSON's words, ``a string or null``): a declared type as a
    message names it."""
    if isinstance(typ, tuple):
        return " or ".join(type_name(t, json_words) for t in typ)
    if json_words:
        return _JSON_WORDS.get(typ, typ.__name__)
    return "null" if typ is NULL else typ.__name__


def _takes(typ: Types, t: type) -> bool:
    return typ is t or (isinstance(typ, tuple) and t in typ)


def expect(
    value: Any, typ: Types, where: str, error: Refuse = CorruptLogError, *, json_words: bool = False
) -> Any:
    """``value`` if it is of ``typ`` (a boolean is not an integer unless ``typ`` takes booleans);
    otherwise ``error("WHERE: expected TYPE, got TYPE")`` (``json_words``: ``"WHERE is an object,
    expected a string"``, the words of a provider's reply)."""
    wrong = isinstance(value, bool) and _takes(typ, int) and not _takes(typ, bool)
    if not wrong and isinstance(value, typ):
        return value
    if json_words:
        got = _JSON_WORDS.get(type(value), type(value).__name__)
        raise error(f"{where} is {got}, expected {type_name(typ, True)}")
    if wrong:
        raise error(f"{where}: expected an integer, got a boolean")
    raise error(f"{where}: expected {type_name(typ)}, got {type(value).__name__}")


class Fields:
    """The fields of one JSON object, checked as they are taken; what is left is ``extra``."""

    __slots__ = ("d", "error", "taken", "where")

    def __init__(self, d: Any, where: str, error: Refuse = CorruptLogError) -> None:
        if not isinstance(d, dict):
            raise error(f"{where}: expected an object, got {type(d).__name__}")
        self.d: dict[str, Any] = d
        self.where = where
        self.error = error
        self.taken: set[str] = set()

    def has(self, key: str) -> bool:
        return key in self.d

    def get(self, key: str, typ: Types, default: Any = ...) -> Any:
        """Field ``key`` of ``typ``; ``default`` when absent (required when no default is given)."""
        self.taken.add(key)
        if key not in self.d:
            if default is ...:
                raise self.error(f"{self.where}: missing field {key!r}")
            return default
        return expect(self.d[key], typ, f"{self.where}.{key}", self.error)

    def items(self, key: str, typ: Types, default: Any = None) -> tuple[Any, ...] | None:
        """An array field whose every item is of ``typ``, as a tuple (``default`` when absent)."""
        raw = self.get(key, list, default)
        if raw is None or raw is default:
            return raw
        where = f"{self.where}.{key}"
        return tuple(expect(v, typ, f"{where}[{i}]", self.error) for i, v in enumerate(raw))

    def extra(self) -> dict[str, Any]:
        """The fields not taken, as they were."""
        return {k: v for k, v in self.d.items() if k not in self.taken}


def field(
    obj: Any, key: str, typ: Types, where: str, default: Any = ..., error: Refuse = CorruptLogError
) -> Any:
    """One field of ``obj``, checked as ``Fields(obj, where, error).get(key, typ, default)`` checks
    it (without keeping what was taken: for a value's JSON shape, read whole)."""
    if not isinstance(obj, dict):
        raise error(f"{where}: expected an object, got {type(obj).__name__}")
    if key not in obj:
        if default is ...:
            raise error(f"{where}: missing field {key!r}")
        return default
    return expect(obj[key], typ, f"{where}.{key}", error)
