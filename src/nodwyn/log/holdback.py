"""A text that arrives in pieces (a streamed reply), let out redacted as soon as no secret can span the cut.

``Holdback(known).feed(piece)`` returns what may be shown now, redacted; ``flush()`` the rest at
the end. What is held back is only what could still become a secret shape (ADR 0430):

- the trailing run of non-blank characters (every secret body the redactor replaces is such a run:
  a key, a token, a value after ``=``, a URL with a password), until a blank ends it;
- a quoted value after a secret's name (``password = "two words"``) until its quote closes;
- a private key block from its ``-----BEGIN`` until its END line;
- a run that may be a held credential split over a line break, until the next line's first run ends.

Everything before that is let out at once, redacted together with the last
characters already let out (``LOOK_BEHIND``): a shape's context (``Authorization: Bearer``,
``password:``) may have been shown before its value came, and the value is still replaced.
``context()`` computes the bound from the redactor's own patterns (its shapes and gitleaks'
rules): the widest part of a match that precedes its secret, blank runs counted as ``_BLANKS``.
Parsing the 216 rules takes a quarter of a second, so the stream uses ``LOOK_BEHIND``, which a test
holds at or above ``context()``: a rule added with a wider context fails that test.
"""

from __future__ import annotations

import importlib
import re
from functools import cache
from typing import Any, Final

from nodwyn.log.redact import _WORDS, SHAPES, Known, redact_text
from nodwyn.log.ruleset import gitleaks, literal_first, translate

LOOK_BEHIND: Final = 256  # characters let out kept as context (at least context(); tested)
_BLANKS: Final = 64  # an unbounded repeat before a secret (blanks, a name) counted as this many
_LONG_RUN: Final = 16 << 10  # a run without a blank is let out (redacted whole, all but 4 KiB) past this
_PEM_HOLD: Final = 64 << 10  # an unterminated key block is held back up to this many characters
_RUN_TAIL: Final = 4096
_sre: Any = None  # re._parser, which measures a pattern's width (no public API does), when first asked
# a secret's name and its assignment, ending at the quote that opens its value
_QUOTED: Final = re.compile(rf"(?i:{_WORDS}|token)\\?[\"']?[ \t]*(?:=|:|=>|:=)[ \t]*\\?([\"'])\Z")
_BREAK: Final = re.compile(r"(\S+)[ \t]*(?:\\?\r?\n|(?:\\r)?\\n)[ \t]*\S*\Z")


def _item_width(state: Any, item: Any) -> int:
    sre = _sre
    width = int(sre.SubPattern(state, [item]).getwidth()[1])
    return _BLANKS if width >= sre.MAXREPEAT else width


def _width_before(state: Any, items: Any, group: int) -> int | None:
    """The widest a match of ``items`` is before ``group`` starts (None: the group is not in them)."""
    sre = _sre
    total = 0
    for item in items:
        op, av = item
        if op is sre.SUBPATTERN:
            if av[0] == group:
                return total
            inner = _width_before(state, av[3], group)
            if inner is not None:
                return total + inner
        elif op is sre.BRANCH:
            found = [w for alt in av[1] if (w := _width_before(state, alt, group)) is not None]
            if found:
                return total + max(found)
        total += _item_width(state, item)
    return None


def _context_of(pattern: str, flags: int, group: int | None) -> int:
    """``group`` None: gitleaks' default, the first group if the pattern has one."""
    if group == 0:
        return 0
    tree = _sre.parse(pattern, flags)
    if group is None:
        group = 1 if tree.state.groups > 1 else 0
    width = _width_before(tree.state, tree, group) if group else 0
    return 0 if width is None else width


@cache
def context() -> int:
    """The look-behind: the widest context any shape or gitleaks rule matches before its secret."""
    global _sre
    _sre = importlib.import_module("re._parser")
    widths = [_context_of(s.regex.pattern, s.regex.flags, s.group) for s in SHAPES]
    for rule in gitleaks().rules:
        pattern = literal_first(translate(rule.source))
        widths.append(_context_of(pattern, re.ASCII, rule.secret_group or None))
    return max(widths)


def _open_quotes(text: str, line: int, run: int) -> list[int]:
    """Quotes of the line that may open a value still coming: of each kind, the last one if it is
    unclosed, or the one before it when the last closes it inside the trailing run (the value's
    match may still grow). Only these are matched against a secret's name (a regex per quote)."""
    out = []
    for ch in "\"'":
        last = text.rfind(ch, line)
        if last < 0:
            continue
        before = text.rfind(ch, line, last)
        out.append(last)  # unclosed (or an opening one; the name's regex decides)
        if before >= 0 and last >= run:
            out.append(before)  # closed by the run still coming
    return out


def held_from(text: str, base: int, known: Known) -> int:
    """Where the part of ``text`` that could still become a secret starts (at least ``base``:
    ``text[:base]`` has been let out already)."""
    n = len(text)
    hold = n
    while hold > base and not text[hold - 1].isspace():
        hold -= 1  # the trailing run
    run = hold
    # an open quote let out would have held everything after it: look from a name's width back
    line = max(text.rfind("\n", 0, n) + 1, base - LOOK_BEHIND)
    for quote in _open_quotes(text, line, run):
        if _QUOTED.search(text, max(line, quote - LOOK_BEHIND), quote + 1) is not None:
            hold = min(hold, quote)
    begin = text.rfind("-----BEGIN", max(0, n - _PEM_HOLD))
    if begin >= 0 and "-----END " not in text[begin:]:
        header_end = text.find("-----", begin + 10)
        if header_end < 0 or "PRIVATE KEY" in text[begin:header_end]:
            hold = min(hold, begin)
    tail = text[max(0, n - 512) :]
    broken = _BREAK.search(text, max(0, n - 512)) if known and ("\n" in tail or "\\n" in tail) else None
    if broken is not None and any(p in broken.group(1) for p in known.probes):
        hold = min(hold, broken.start(1))  # a held value's first half, maybe
    return max(base, hold)


class Holdback:
    """A streamed text, let out redacted piece by piece (see the module's docstring)."""

    def __init__(self, known: Known) -> None:
        self.known = known
        self._pending = ""  # not let out yet
        self._before = ""  # the last LOOK_BEHIND characters let out, as they came

    @property
    def pending(self) -> bool:
        return bool(self._pending)

    def feed(self, piece: str) -> str:
        """What may be shown now, redacted; the rest is kept."""
        self._pending += piece
        text = self._before + self._pending
        base = len(self._before)
        cut = held_from(text, base, self.known)
        held = len(text) - cut
        if held > _LONG_RUN and not self._in_key_block(text, cut):
            # a very long run: redacted whole before it is cut, so the cut cannot split a credential
            # into halves neither of which matches; then let out all but a key's length
            self._pending = redact_text(self._pending, self.known)
            text = self._before + self._pending
            cut = max(base, len(text) - _RUN_TAIL)
        if cut == base:
            return ""
        return self._let_out(text[base:cut])

    def _in_key_block(self, text: str, cut: int) -> bool:
        return text.startswith("-----BEGIN", cut) and len(text) - cut < _PEM_HOLD

    def flush(self) -> str:
        """The rest, at the end of the text."""
        rest, self._pending = self._pending, ""
        return self._let_out(rest) if rest else ""

    def _let_out(self, ready: str) -> str:
        before = self._before
        self._pending = self._pending[len(ready) :]
        self._before = (before + ready)[-LOOK_BEHIND:]
        if not before:
            return redact_text(ready, self.known)
        whole = redact_text(before + ready, self.known)
        shown_before = redact_text(before, self.known)
        if whole.startswith(shown_before):
            return whole[len(shown_before) :]
        return redact_text(ready, self.known)  # a match across the cut that the hold did not foresee
