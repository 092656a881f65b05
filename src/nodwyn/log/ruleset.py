"""gitleaks' secret rules, read as data from ``rules/gitleaks.toml`` (vendored verbatim, MIT).

The file is gitleaks' maintained default configuration (see ``rules/SOURCES``). Each rule has an
id, a Go (RE2) regex, the keywords one of which must occur (lowercase) for the regex to run at
all, an optional secret group, an optional Shannon-entropy floor and allowlists. This module
translates the regexes to Python's dialect (scoped ``(?i)``, ``\\z``, POSIX classes, ASCII
classes), compiles a rule only when one of its keywords is first met, and applies the rules the
way gitleaks does: the secret is the rule's secret group (else the first group that matched,
else the whole match); a rule's entropy floor, the global allowlist and the rule's allowlists
(regexes against the secret, the match or the line; stopwords) can each drop a finding.

Left out, on purpose (docs/adr/0130-redaction-rule-set.md): rules that need a file path (a log
event has none) and ``generic-api-key``, whose "any name with key/token/auth in it, then any
high-entropy value" would replace identifiers in the code a coding agent reads and edits; our
own name-based shapes in ``redact.py`` cover assignments with a precise name instead.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from typing import Any, Final

EXCLUDED: Final = frozenset({"generic-api-key"})

_POSIX: Final = {
    "alnum": "A-Za-z0-9",
    "alpha": "A-Za-z",
    "digit": "0-9",
    "lower": "a-z",
    "upper": "A-Z",
    "space": r"\t\n\v\f\r ",
    "xdigit": "0-9A-Fa-f",
    "word": "A-Za-z0-9_",
    "punct": r"!-/:-@\[-`{-~",
}
_FLAGS: Final = re.compile(r"\(\?([a-zA-Z]+)\)")


def translate(go: str) -> str:
    """A Go RE2 pattern in Python's dialect (compile it with ``re.ASCII``, as RE2's classes are).

    ``(?i)`` in the middle of a pattern applies to the rest of its group in Go; Python allows
    global flags only at the start, so it becomes a scoped group closed where the Go group ends.
    ``\\z`` is ``\\Z``; ``[[:alnum:]]`` and friends are spelled out; a ``[`` inside a class is
    escaped (Python warns about a possible nested set).
    """
    return _Translation(go).run()


class _Translation:
    """One pattern being translated: the output so far, the position, whether it is inside a
    class, and per open group the flag groups opened in it so far."""

    def __init__(self, go: str) -> None:
        self.go = go
        self.out: list[str] = []
        self.scoped: list[list[str]] = [[]]
        self.i = 0
        self.in_class = False

    def run(self) -> str:
        while self.i < len(self.go):
            c = self.go[self.i]
            if c == "\\" and self.i + 1 < len(self.go):
                self.escape()
            elif self.in_class:
                self.class_char(c)
            elif c == "[":
                self.open_class()
            else:
                self.outside(c)
        self.out.append(")" * sum(len(x) for x in self.scoped))
        return "".join(self.out)

    def escape(self) -> None:
        nxt = self.go[self.i + 1]
        self.out.append("\\Z" if nxt == "z" and not self.in_class else "\\" + nxt)
        self.i += 2

    def class_char(self, c: str) -> None:
        """A character inside a class: a POSIX class spelled out, a ``[`` escaped, ``]`` closing it."""
        go, i = self.go, self.i
        if go.startswith("[:", i):
            end = go.find(":]", i + 2)
            name = go[i + 2 : end] if end > 0 else ""
            if name in _POSIX:
                self.out.append(_POSIX[name])
                self.i = end + 2
                return
        if c == "[":
            self.out.append("\\[")
        else:
            self.out.append(c)
            self.in_class = c != "]"
        self.i += 1

    def open_class(self) -> None:
        """A ``[`` opening a class, with its ``^`` and a literal ``]`` first."""
        self.in_class = True
        self.out.append("[")
        self.i += 1
        if self.go.startswith("^", self.i):
            self.out.append("^")
            self.i += 1
        if self.go.startswith("]", self.i):  # a literal ] first in a class
            self.out.append("\\]")
            self.i += 1

    def outside(self, c: str) -> None:
        """Outside a class: a flag group not at the very start becomes a scoped group, closed
        where Go's group ends (and around each alternative of it)."""
        m = _FLAGS.match(self.go, self.i) if c == "(" else None
        if m is not None and (self.i > 0 or len(self.scoped) > 1):
            self.out.append(f"(?{m.group(1)}:")
            self.scoped[-1].append(m.group(1))
            self.i = m.end()
            return
        if c == "(":
            self.scoped.append([])
        elif c == ")":
            self.out.append(")" * len(self.scoped.pop()))
            if not self.scoped:
                self.scoped.append([])
        elif c == "|" and self.scoped[-1]:
            # Go's flags run to the end of the group, across alternatives: close, then reopen
            flags = self.scoped[-1]
            c = ")" * len(flags) + "|" + "".join(f"(?{f}:" for f in flags)
        self.out.append(c)
        self.i += 1


_LEADING: Final = re.compile(r"\\b\(([A-Za-z0-9_][A-Za-z0-9_-]*)")


def literal_first(pattern: str) -> str:
    """``\\b(lit…`` as ``(lit(?<!\\w lit)…``: the same matches, but the regex now starts with a
    literal, which Python's engine finds with a fast scan instead of trying every position."""
    m = _LEADING.match(pattern)
    if m is None:
        return pattern
    lit = m.group(1)
    rest = pattern[m.end() :]
    if rest[:1] in ("{", "?", "*", "+"):  # the last character is quantified: not part of the literal
        lit, rest = lit[:-1], lit[-1] + rest
    if not lit:
        return pattern
    return f"({lit}(?<![A-Za-z0-9_]{re.escape(lit)})" + rest


def shannon(s: str) -> float:
    """Bits per character, as gitleaks computes it."""
    if not s:
        return 0.0
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


@dataclass(frozen=True, slots=True)
class _Allow:
    target: str  # "secret" | "match" | "line"
    regexes: tuple[re.Pattern[str], ...]
    stopwords: tuple[str, ...]
    all_of: bool  # condition AND

    def allows(self, secret: str, match: str, line: str) -> bool:
        subject = {"secret": secret, "match": match, "line": line}[self.target]
        checks: list[bool] = []
        if self.regexes:
            checks.append(any(r.search(subject) for r in self.regexes))
        if self.stopwords:
            low = secret.lower()
            checks.append(any(w in low for w in self.stopwords))
        if not checks:
            return False
        return all(checks) if self.all_of else any(checks)


@dataclass(slots=True)
class Rule:
    """One gitleaks rule; its regex is compiled on first use."""

    id: str
    keywords: tuple[str, ...]
    source: str
    secret_group: int
    entropy: float
    allows: tuple[_Allow, ...]
    _regex: re.Pattern[str] | None = field(default=None, repr=False)

    @property
    def regex(self) -> re.Pattern[str]:
        if self._regex is None:
            self._regex = re.compile(literal_first(translate(self.source)), re.ASCII)
        return self._regex

    def secret_span(self, m: re.Match[str]) -> tuple[int, int]:
        if self.secret_group and self.secret_group <= (m.re.groups or 0):
            return m.span(self.secret_group)
        for g in range(1, (m.re.groups or 0) + 1):
            if m.group(g):
                return m.span(g)
        return m.span(0)


@dataclass(frozen=True, slots=True)
class RuleSet:
    rules: tuple[Rule, ...]
    keywords: tuple[str, ...]  # every rule's keywords, once each
    allow_regexes: tuple[re.Pattern[str], ...]  # the global allowlist (against the secret)
    stopwords: tuple[str, ...]

    def allowed(self, rule: Rule, secret: str, match: str, line: str) -> bool:
        """Whether a finding is dropped: too little entropy, or an allowlist takes it."""
        if rule.entropy and shannon(secret) <= rule.entropy:
            return True
        low = secret.lower()
        if any(w in low for w in self.stopwords):
            return True
        if any(r.search(secret) for r in self.allow_regexes):
            return True
        return any(a.allows(secret, match, line) for a in rule.allows)


def _allow(raw: dict[str, Any]) -> _Allow | None:
    if raw.get("paths") and raw.get("condition", "OR").upper() == "AND":
        return None  # needs a file path to hold: never does here
    regexes = tuple(re.compile(translate(r), re.ASCII) for r in raw.get("regexes", ()))
    stopwords = tuple(w.lower() for w in raw.get("stopwords", ()))
    if not regexes and not stopwords:
        return None
    return _Allow(
        target=raw.get("regexTarget", "secret"),
        regexes=regexes,
        stopwords=stopwords,
        all_of=raw.get("condition", "OR").upper() == "AND",
    )


def parse(text: str) -> RuleSet:
    data = tomllib.loads(text)
    rules: list[Rule] = []
    for raw in data.get("rules", ()):
        if raw["id"] in EXCLUDED or "path" in raw or "regex" not in raw or not raw.get("keywords"):
            continue
        allows = tuple(a for a in (_allow(x) for x in raw.get("allowlists", ())) if a is not None)
        rules.append(
            Rule(
                id=raw["id"],
                keywords=tuple(k.lower() for k in raw["keywords"]),
                source=raw["regex"],
                secret_group=int(raw.get("secretGroup", 0)),
                entropy=float(raw.get("entropy", 0.0)),
                allows=allows,
            )
        )
    glob = data.get("allowlist", {})
    keywords = tuple(dict.fromkeys(k for r in rules for k in r.keywords))
    return RuleSet(
        rules=tuple(rules),
        keywords=keywords,
        allow_regexes=tuple(re.compile(translate(r), re.ASCII) for r in glob.get("regexes", ())),
        stopwords=tuple(w.lower() for w in glob.get("stopwords", ())),
    )


@cache
def gitleaks() -> RuleSet:
    """The vendored rule set, read and parsed once (regexes compile when first needed)."""
    return parse(files("nodwyn.log").joinpath("rules", "gitleaks.toml").read_text("utf-8"))
