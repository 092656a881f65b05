"""A tool call's arguments (JSON text a model wrote) read as a value within bounds (ADR 0321).

Python's ``json`` raises ``RecursionError`` on arrays nested some thousand deep and ``ValueError``
on an integer of more than 4,300 digits; either, out of a model's reply, would end a run, and
every reader of the log (resume, export, the TUI) would fail on it again. ``load_arguments``
refuses both (and text that is not JSON) with one ``ArgumentsError`` whose message says what is
wrong, so a caller can answer the model with a tool error or show the text as it is. Pure.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

MAX_DEPTH: Final = 64  # arrays and objects nested deeper than this are refused (schemas nest a few)
_STRING: Final = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKET: Final = re.compile(r"[^\[\]{}]++")


class ArgumentsError(ValueError):
    """Arguments that cannot be read: the message says why (no position for bounds)."""


def nesting(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON ``text`` (brackets inside strings aside),
    or 0 when it has too few brackets to nest past ``MAX_DEPTH`` (then nothing is scanned). Linear."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return 0
    brackets = _NOT_BRACKET.sub("", _STRING.sub('""', text))
    depth = deepest = 0
    for c in brackets:
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def load_arguments(text: str) -> Any:
    """``text`` as a JSON value (empty text is ``{}``); ``ArgumentsError`` when it is not JSON,
    nests deeper than ``MAX_DEPTH`` or holds an integer too long to read."""
    if not text.strip():
        return {}
    deep = nesting(text)
    if deep > MAX_DEPTH:
        raise ArgumentsError(f"arguments nest {deep} deep, more than the {MAX_DEPTH} allowed")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArgumentsError(f"arguments are not valid JSON ({exc.msg} at char {exc.pos})") from None
    except (ValueError, RecursionError):  # an integer past Python's 4,300-digit limit
        raise ArgumentsError("arguments hold a number too long to read (more than 4,300 digits)") from None
