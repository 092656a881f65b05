"""Redaction: replace known credential shapes in JSON values before they reach the log.

``redact(value)`` walks a JSON value (dicts, lists, strings; other scalars pass through) and
returns a redacted copy with a report. Each known shape is replaced by ``[redacted:<shape>]``
(for a bearer token or a URL password only the secret part is replaced). Strings of unknown shape
that look random are *counted* in the report and never changed: an encrypted reasoning blob in
base64url must reach the log byte for byte (docs/adr/0005-redaction.md).

Speed matters: a reply can carry megabytes of base64. Every shape is anchored on a literal prefix,
a plain substring test (``in``, C speed) decides whether a shape's regex runs at all, and every key
shape requires a token boundary that excludes the base64 and base64url alphabets on the left, so a
prefix met inside a random blob never matches.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

# Characters of base64 and base64url; a key must not be glued to one on either side.
_KEYCHARS: Final = "A-Za-z0-9+/_\\-"
_NOT_AFTER: Final = f"(?![{_KEYCHARS}])"


def _left(literal: str) -> str:
    """The left boundary, as lookbehinds placed *after* a literal so the regex keeps its literal
    prefix: not glued to an alphabet character, unless that is the ``n``/``r``/``t`` of a JSON
    escape (a key at the start of a line of double-encoded text, ``...\\nsk-...``)."""
    lit = re.escape(literal)
    return f"(?:(?<![{_KEYCHARS}]{lit})|(?<=\\\\[nrt]{lit}))"


def marker(shape: str) -> str:
    return f"[redacted:{shape}]"


@dataclass(frozen=True, slots=True, kw_only=True)
class RedactionReport:
    """What one ``redact`` call did: replacements by shape, and unknown high-entropy strings seen."""

    replaced: tuple[tuple[str, int], ...] = ()
    unknown_entropy: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.replaced)

    def as_json(self) -> dict[str, Any]:
        return {"replaced": dict(self.replaced), "unknown_entropy": self.unknown_entropy}


_Repl = Callable[[re.Match[str]], str]


@dataclass(frozen=True, slots=True)
class _Shape:
    name: str
    needles: tuple[str, ...]  # the regex runs only if one of these is a substring
    regex: re.Pattern[str]
    group: int  # the group replaced by the marker (0: the whole match)
    needs_digit: bool = False  # refuse matches whose secret has no digit (prose, identifiers)


def _shape(
    name: str, needles: tuple[str, ...], pattern: str, group: int = 0, needs_digit: bool = False
) -> _Shape:
    return _Shape(name, needles, re.compile(pattern, re.DOTALL), group, needs_digit)


_SK_BODY: Final = "[A-Za-z0-9_-]{20,300}+" + _NOT_AFTER

SHAPES: Final[tuple[_Shape, ...]] = (
    _shape(
        "private-key",
        ("PRIVATE KEY-----",),
        r"-----BEGIN ([A-Z0-9 ]*PRIVATE KEY)-----.*?(?:-----END \1-----|\Z)",
    ),
    _shape("anthropic-key", ("sk-",), "sk-ant-" + _left("sk-ant-") + _SK_BODY, needs_digit=True),
    _shape("openrouter-key", ("sk-",), "sk-or-v1-" + _left("sk-or-v1-") + _SK_BODY, needs_digit=True),
    # after the two above, so their keys are already markers; sk-proj-/sk-svcacct- are in the body
    _shape("openai-key", ("sk-",), "sk-" + _left("sk-") + _SK_BODY, needs_digit=True),
    _shape(
        "github-token",
        ("gh",),
        "gh" + _left("gh") + "[pousr]_[A-Za-z0-9]{36,251}+" + _NOT_AFTER,
    ),
    _shape(
        "github-token",
        ("github_pat_",),
        "github_pat_" + _left("github_pat_") + "[A-Za-z0-9_]{22,251}+" + _NOT_AFTER,
    ),
    _shape(
        "aws-access-key",
        ("AKIA", "ASIA", "ABIA", "ACCA"),
        "A" + _left("A") + "(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}" + _NOT_AFTER,
    ),
    _shape(
        "aws-secret-key",
        ("ecret", "ECRET"),
        r"(?i:(?:aws_?)?secret_?access_?key)[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9+/=_-])",
        group=1,
    ),
    _shape("google-api-key", ("AIza",), "AIza" + _left("AIza") + "[0-9A-Za-z_-]{35}" + _NOT_AFTER),
    _shape(
        "bearer-token",
        ("earer", "EARER"),
        r"(?<![A-Za-z0-9])(?i:bearer)[ \t]+([A-Za-z0-9._~+/-]{16,4096}+=*)(?![A-Za-z0-9._~+/=-])",
        group=1,
        needs_digit=True,
    ),
    _shape(
        "url-password",
        ("://",),
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:/?#@\"'<>\[\]]*:([^\s/?#@\"'<>]+)@",
        group=1,
    ),
)

_URL_ONLY: Final = tuple(s for s in SHAPES if s.name == "url-password")
_SHORT: Final = 20  # every other shape is at least this long, and so is every counted token

# dict keys whose string value is an AWS secret access key (compared without case, _ and -)
_AWS_SECRET_KEYS: Final = frozenset({"awssecretaccesskey", "secretaccesskey", "awssecretkey"})
_AWS_SECRET_VALUE: Final = re.compile(r"[A-Za-z0-9/+]{40}")

# A long string of the base64/base64url alphabet with at most trailing padding holds no known shape:
# every key shape must start at the string's start (its left boundary excludes the alphabet) and end
# before a character outside it, so it would be the whole string, longer than any key; the other
# shapes need a space, ':' or an inner '='. Such strings skip the shape regexes (exactly, not a guess).
_BLOB: Final = re.compile(r"[A-Za-z0-9+/_-]*={0,2}")
_BLOB_MIN: Final = 1024

_TOKEN: Final = re.compile(r"[A-Za-z0-9+/_-]{24,}")
_ENTROPY_SAMPLE: Final = 128
_UPPER: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_LOWER: Final = frozenset("abcdefghijklmnopqrstuvwxyz")
_DIGITS: Final = frozenset("0123456789")
_CLASSES: Final = str.maketrans(
    {**dict.fromkeys(_UPPER, "U"), **dict.fromkeys(_LOWER, "l"), **dict.fromkeys(_DIGITS, "d")}
)
_RUNS: Final = re.compile(r"U+|l+|d+|[^Uld]+")


def _has_digit(s: str) -> bool:
    return any(c.isdigit() for c in s)


def _looks_random(token: str) -> bool:
    """Upper case, lower case and digits mixed often (not words in CamelCase), at high entropy."""
    sample = token[:_ENTROPY_SAMPLE]
    counts = Counter(sample)
    chars = counts.keys()
    if chars.isdisjoint(_UPPER) or chars.isdisjoint(_LOWER) or chars.isdisjoint(_DIGITS):
        return False
    n = len(sample)
    entropy = -sum(c / n * math.log2(c / n) for c in counts.values())
    if entropy < 0.75 * math.log2(min(n, 64)):
        return False
    runs = len(_RUNS.findall(sample.translate(_CLASSES)))  # runs of one character class
    return runs - 1 >= 0.45 * (n - 1)


class _Walk:
    __slots__ = ("counts", "unknown")

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.unknown = 0

    def text(self, s: str) -> str:
        if len(s) < _SHORT:
            # too short for any shape but a URL password, and for the entropy count
            return self._shapes(s, _URL_ONLY) if "://" in s else s
        if len(s) >= _BLOB_MIN and _BLOB.fullmatch(s):
            # one token: the whole string (its padding aside)
            self.unknown += _looks_random(s)
            return s
        s = self._shapes(s, SHAPES)
        for m in _TOKEN.finditer(s):
            if _looks_random(m.group(0)):
                self.unknown += 1
        return s

    def _shapes(self, s: str, shapes: tuple[_Shape, ...]) -> str:
        # a needle's presence is looked up once per string (markers contain no needle, so a
        # replacement cannot make a needle appear)
        seen: dict[str, bool] = {}
        for shape in shapes:
            for needle in shape.needles:
                hit = seen.get(needle)
                if hit is None:
                    hit = seen[needle] = needle in s
                if hit:
                    s = shape.regex.sub(self._replacer(shape), s)
                    break
        return s

    def _replacer(self, shape: _Shape) -> _Repl:
        mark = marker(shape.name)

        def repl(m: re.Match[str]) -> str:
            secret = m.group(shape.group)
            if secret == mark or (shape.needs_digit and not _has_digit(secret)):
                return m.group(0)
            self.counts[shape.name] = self.counts.get(shape.name, 0) + 1
            if shape.group == 0:
                return mark
            start, end = m.span(shape.group)
            whole = m.group(0)
            base = m.start(0)
            return whole[: start - base] + mark + whole[end - base :]

        return repl

    def value(self, v: Any) -> Any:
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, dict):
            out: dict[Any, Any] = {}
            for k, item in v.items():
                key = self.text(k) if isinstance(k, str) else k
                if (
                    isinstance(k, str)
                    and isinstance(item, str)
                    and k.lower().replace("_", "").replace("-", "") in _AWS_SECRET_KEYS
                    and _AWS_SECRET_VALUE.fullmatch(item)
                ):
                    self.counts["aws-secret-key"] = self.counts.get("aws-secret-key", 0) + 1
                    out[key] = marker("aws-secret-key")
                    continue
                out[key] = self.value(item)
            return out
        if isinstance(v, list | tuple):
            return [self.value(item) for item in v]
        return v


def redact(value: Any) -> tuple[Any, RedactionReport]:
    """Return ``value`` with every known credential shape replaced, and what was done.

    Pure: no I/O, the input is not modified. Lists and tuples come back as lists.
    """
    walk = _Walk()
    out = walk.value(value)
    report = RedactionReport(replaced=tuple(sorted(walk.counts.items())), unknown_entropy=walk.unknown)
    return out, report
