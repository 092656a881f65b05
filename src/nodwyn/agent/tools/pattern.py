"""fs-grep's patterns, matched by RE2: time linear in the text, whatever the pattern.

A backtracking engine (Python's ``re``) takes exponential time on patterns such as ``^(a+)+$``; a
model (or a prompt injected into what it reads) can write one, and fs-grep would never return. RE2
accepts most of the same syntax (classes, groups, named groups, ``(?i)``, ``\\d``, ``\\b``) and refuses
what needs backtracking (backreferences, lookaround) with a message that says so. See ADR 0121.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import re2

from nodwyn.errors import ToolError

_OPTIONS: Any = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print parse errors to stderr; we answer the model instead
_OPTIONS.max_mem = 64 << 20


class Match(Protocol):
    def start(self) -> int: ...
    def end(self) -> int: ...


class Pattern(Protocol):
    def search(self, text: str) -> object | None: ...
    def finditer(self, text: str) -> Iterator[Match]: ...


def file_filter(pattern: str) -> Pattern | None:
    """The pattern for a whole file at once, with ``^``/``$`` at line edges: every line that matches
    on its own lies within one of its matches, so fs-grep tries only the lines those touch. ``None``
    when the pattern anchors to the text's own ends (``\\A``, ``\\z``), which a whole file changes."""
    if "\\A" in pattern or "\\z" in pattern:
        return None
    try:
        compiled: Pattern = re2.compile("(?m)" + pattern, options=_OPTIONS)
    except re2.error:
        return None
    return compiled


def compile_pattern(pattern: str) -> Pattern:
    """The compiled pattern, or one clear error (invalid, or a feature RE2 does not have)."""
    try:
        compiled: Pattern = re2.compile(pattern, options=_OPTIONS)
    except re2.error as exc:
        reason = (
            exc.args[0].decode("utf-8", "replace")
            if exc.args and isinstance(exc.args[0], bytes)
            else str(exc)
        )
        hint = ""
        if "invalid escape sequence" in reason or "perl operator" in reason:
            hint = "; fs-grep matches in linear time (RE2), without backreferences or lookaround"
        raise ToolError(
            f"fs-grep: pattern {pattern!r} is not a valid regular expression ({reason}){hint}"
        ) from None
    return compiled
