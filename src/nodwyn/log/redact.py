"""Redaction: replace credentials in JSON values before they reach the log (or a screen).

``redact(value, known)`` walks a JSON value (dicts, lists, strings; other scalars pass through)
and returns a redacted copy with a report. Three kinds of thing are replaced by
``[redacted:<name>]`` (docs/adr/0005-redaction.md, docs/adr/0130-redaction-rule-set.md):

1. the exact values of the credentials nodwyn holds (``known``), whatever their shape, and their
   encoded forms (base64, hex, URL, JSON escapes, split over lines; ``encoded.py``):
   ``[redacted:credential]``;
2. our own shapes (``SHAPES``): the model providers' keys, cloud keys and the context shapes
   (a bearer or Basic header, a password in a URL or a query, a secret-named assignment);
3. gitleaks' maintained rule set, vendored as data (``ruleset.py``): ``[redacted:<rule id>]``.

For a shape with context (a header, an assignment, a URL) only the secret part is replaced.
Strings of unknown shape that look random are *counted* in the report and never changed: an
encrypted reasoning blob in base64url must reach the log byte for byte.

Speed matters: a reply can carry megabytes of base64, and every append is redacted. Every shape
and rule names literal keywords; one Aho-Corasick pass over the lower-cased string finds which of
them occur, and only those shapes' regexes run. A string of 1,024+ characters of the base64
alphabet only is one opaque token: only known credential values are looked for in it.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Final, TypeVar

from nodwyn.log.encoded import forms_of, hidden_spans, may_hide, probes_of
from nodwyn.log.ruleset import Rule, RuleSet, gitleaks

# Characters of base64 and base64url; a key must not be glued to one on either side.
_KEYCHARS: Final = "A-Za-z0-9+/_\\-"
_NOT_AFTER: Final = f"(?![{_KEYCHARS}])"
CREDENTIAL: Final = "credential"
MIN_KNOWN: Final = 8  # shorter credential values are not looked for (they would hit ordinary text)


def _left(literal: str) -> str:
    """The left boundary, as lookbehinds placed *after* a literal so the regex keeps its literal
    prefix: not glued to an alphabet character other than ``_``, unless that is the ``n``/``r``/``t``
    of a JSON escape (a key at the start of a line of double-encoded text, ``...\\nsk-...``). A key
    glued after ``_`` is checked again by the replacer (``_glued_ok``)."""
    lit = re.escape(literal)
    return f"(?:(?<![A-Za-z0-9+/\\-]{lit})|(?<=\\\\[nrt]{lit}))"


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


@dataclass(frozen=True, slots=True)
class Known:
    """The exact credential values to replace wherever they occur, longest first, with their
    encoded forms (``encoded.py``: base64, hex, URL and JSON encodings; escaped or split ones are
    found by ``encoded.hidden_spans``).

    Values shorter than ``MIN_KNOWN`` characters are left out: a credential ``test`` would
    otherwise replace every "test" in a session.
    """

    values: tuple[str, ...] = ()
    forms: tuple[str, ...] = ()  # the values' encoded forms, longest first
    probes: tuple[str, ...] = ()  # what a value split over two lines still shows whole

    @classmethod
    def of(cls, values: Iterable[str]) -> Known:
        kept = {v for v in values if isinstance(v, str) and len(v) >= MIN_KNOWN}
        forms = {f for v in kept for f in forms_of(v)} - kept
        return cls(_longest_first(kept), _longest_first(forms), probes_of(kept))

    def __repr__(self) -> str:  # never the values
        return f"Known({len(self.values)} values)"

    def __bool__(self) -> bool:
        return bool(self.values)


def _longest_first(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(values, key=lambda v: (-len(v), v)))


NO_KNOWN: Final = Known()

_Repl = Callable[[re.Match[str]], str]
_Check = Callable[[str], bool]
_At = Callable[[str, int], int | None]


@dataclass(frozen=True, slots=True)
class _Shape:
    name: str
    needles: tuple[str, ...]  # lower case; the regex runs only if one of these occurs
    regex: re.Pattern[str]
    group: int  # the group replaced by the marker (0: the whole match)
    check: _Check | None = None  # refuse a match whose secret fails this (prose, identifiers)
    glue: bool = False  # a key that may be glued after "_" (checked by _glued_ok)
    at: _At | None = None  # anchored: matched only where a needle starts, from where this says


def _shape(
    name: str,
    needles: tuple[str, ...],
    pattern: str,
    group: int = 0,
    check: _Check | None = None,
    glue: bool = False,
    at: _At | None = None,
) -> _Shape:
    return _Shape(name, needles, re.compile(pattern, re.DOTALL), group, check, glue, at)


def _has_digit(s: str) -> bool:
    return any(c.isdigit() for c in s)


def _tokenish(s: str) -> bool:
    """A bearer token without context: a digit, upper case after the first letter, or a symbol
    of the token alphabet (``Bearer authentication`` is prose; ``Bearer abcDEFghiJKL`` is not)."""
    return _has_digit(s) or any(c.isupper() for c in s[1:]) or any(c in "._~+/=" for c in s)


_PLACEHOLDER: Final = re.compile(
    r"(?i)<[^<>]*>|\*+|x{3,}|\.{3,}|•+|…|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{.*\}\}|%\(?\w*\)?s?|"
    r"(?:none|null|nil|true|false|undefined|empty|changeme|redacted|secret|password|token|example|"
    r"your[_-]?\w*|my[_-]?\w*|placeholder|dummy|string|str|bytes|int|bool|any|optional|bearer|basic)|\[redacted:[a-z0-9-]+\]"
)


_ENV_REF: Final = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")  # a variable's name, as config names one


def _real_value(s: str) -> bool:
    """A value that is not a placeholder, a variable reference, a type or a marker."""
    return len(s) >= 4 and not _PLACEHOLDER.fullmatch(s) and not _ENV_REF.fullmatch(s)


_CODE: Final = re.compile(
    r"[A-Za-z_]+(?:\.[A-Za-z_][A-Za-z0-9_]*)*|[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?"
)


def _bare_value(s: str) -> bool:
    """An unquoted value: not a placeholder, a file path, or a name or dotted path without digits
    (code such as ``password=password`` or ``token = self.token``)."""
    return _real_value(s) and not _CODE.fullmatch(s) and not s.startswith(("/", "~/", "./", "../"))


def _basic(s: str) -> bool:
    """A Basic credential decodes to printable ``user:password``."""
    try:
        raw = base64.b64decode(s + "=" * (-len(s) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return ":" in raw and raw.isprintable()


_SK_BODY: Final = "[A-Za-z0-9_-]{20,4096}+" + _NOT_AFTER
_BLOB_SHAPES: Final = ("IQoJb3JpZ2luX2Vj", "FwoGZXIvYXdz")  # AWS session tokens start so


# Names that say a value is a secret (their last word), for assignments, dict keys and queries.
def _spellings(stems: tuple[str, ...], last: str) -> tuple[str, ...]:
    return tuple(f"{stem}{sep}{last}" for stem in stems for sep in ("_", "-", ""))


_NAME_WORDS: Final = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    *_spellings(("api", "private", "secret", "access"), "key"),
    *_spellings(
        ("access", "refresh", "auth", "id", "session", "security", "bearer", "bot", "api", "private"), "token"
    ),
    *_spellings(("client",), "secret"),
)


def _alternation(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(set(words), key=lambda w: (-len(w), w)))


_WORDS: Final = _alternation(_NAME_WORDS)
_SECRET_NAME: Final = re.compile(rf"(?i)(?:[A-Za-z0-9]+[_.-])*(?:{_WORDS})")
_ENV_WORDS: Final = _alternation([*(w.upper() for w in _NAME_WORDS), "TOKEN"])
_QUERY_WORDS: Final = (
    *_NAME_WORDS,
    "token",
    "key",
    "sig",
    "signature",
    "auth",
    "code",
    "x-amz-signature",
    "x-amz-credential",
)
_FLAG_WORDS: Final = (
    "password",
    "passwd",
    "passphrase",
    "token",
    "api-key",
    "apikey",
    "secret",
    "client-secret",
    "access-key",
    "secret-key",
)
_HEADER_WORDS: Final = (
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "x-auth-token",
    "x-access-token",
    "private-token",
    "x-api-token",
    "apikey",
    "proxy-authorization",
    "authorization",
)
_AWS_SECRET_WORDS: Final = tuple(
    f"{a}secret{b}access{c}key" for a in ("aws_", "aws", "") for b in ("_", "") for c in ("_", "")
)
_AWS_SESSION_WORDS: Final = (
    "aws_session_token",
    "aws_security_token",
    "x-amz-security-token",
    "sessiontoken",
)
_ALNUM: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_NAME_CHARS: Final = frozenset(_ALNUM | set("_.-"))


# Where an anchored shape's match starts, given where its word starts (None: not here).
def _at_word(s: str, p: int) -> int | None:
    """The word stands alone on its left (``DB_PASSWORD``, ``"api_key"``; not ``mypassword``)."""
    return p if p == 0 or s[p - 1] not in _ALNUM else None


def _after_auth(s: str, p: int) -> int | None:
    """Right after an ``Authorization:`` header name."""
    return p if s[max(0, p - 32) : p].rstrip(" \t\"'").lower().endswith("authorization:") else None


def _name_start(s: str, p: int, chars: frozenset[str] = _NAME_CHARS) -> int:
    q = p
    while q > 0 and p - q < 64 and s[q - 1] in chars:
        q -= 1
    return q


def _in_query(s: str, p: int) -> int | None:
    """The name (``api_key``, ``oauth_token``) is a query or fragment parameter's."""
    if p == 0 or s[p - 1] not in "?&;#_.-":
        return None
    q = _name_start(s, p)
    return p if q > 0 and s[q - 1] in "?&;#" else None


def _line_start(s: str, p: int) -> int | None:
    """The name begins its line (after indentation and a YAML list's ``- ``)."""
    if _at_word(s, p) is None:
        return None
    q = _name_start(s, p)
    while q > 0 and s[q - 1] in " \t-":
        q -= 1
    return p if q == 0 or s[q - 1] == "\n" else None


def _flag(s: str, p: int) -> int | None:
    """A command's ``--flag`` (``--password``, ``--db-password``)."""
    if p < 2 or s[p - 1] != "-":
        return None
    q = _name_start(s, p, frozenset(_ALNUM | {"-"}))
    return p if s.startswith("--", q) and (q == 0 or s[q - 1] not in _NAME_CHARS) else None


def _header(s: str, p: int) -> int | None:
    return p if p == 0 or s[p - 1] not in _NAME_CHARS else None


def _scheme(s: str, p: int) -> int | None:
    """``://`` at ``p``: the URL starts at its scheme."""
    q = p
    while q > 0 and p - q <= 31 and s[q - 1] in _ALNUM | {"+", ".", "-"}:
        q -= 1
    if q == p or not s[q].isalpha() or (q > 0 and s[q - 1] in _ALNUM | {"+", ".", "-"}):
        return None
    return q


_VALUE_Q: Final = r"\\?([\"'])((?:(?!\\?\1)[^\n\\]|\\[^\"'\n])*)\\?\1(?![.\[%])"

SHAPES: Final[tuple[_Shape, ...]] = (
    _shape(
        "private-key",
        ("private key",),
        r"-----BEGIN ([A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----.*?(?:-----END \1-----|\Z)",
    ),
    _shape(
        "anthropic-key",
        ("sk-ant-",),
        "sk-ant-" + _left("sk-ant-") + _SK_BODY,
        check=_has_digit,
        glue=True,
    ),
    _shape(
        "openrouter-key",
        ("sk-or-v1-",),
        "sk-or-v1-" + _left("sk-or-v1-") + _SK_BODY,
        check=_has_digit,
        glue=True,
    ),
    # after the two above, so their keys are already markers; sk-proj-/sk-svcacct- are in the body
    _shape("openai-key", ("sk-",), "sk-" + _left("sk-") + _SK_BODY, check=_has_digit, glue=True),
    _shape(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        "gh" + _left("gh") + "[pousr]_[A-Za-z0-9]{36,251}+" + _NOT_AFTER,
        glue=True,
    ),
    _shape(
        "github-token",
        ("github_pat_",),
        "github_pat_" + _left("github_pat_") + "[A-Za-z0-9_]{22,251}+" + _NOT_AFTER,
        glue=True,
    ),
    _shape("groq-key", ("gsk_",), "gsk_" + _left("gsk_") + "[A-Za-z0-9]{40,64}+" + _NOT_AFTER, glue=True),
    _shape("xai-key", ("xai-",), "xai-" + _left("xai-") + "[A-Za-z0-9]{60,100}+" + _NOT_AFTER, glue=True),
    _shape(
        "google-oauth-token",
        ("ya29.",),
        r"ya29\." + _left("ya29.") + r"[0-9A-Za-z_-]{20,2048}+" + _NOT_AFTER,
        glue=True,
    ),
    _shape(
        "aws-access-key",
        ("akia", "asia", "abia", "acca"),
        "A" + _left("A") + "(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}" + _NOT_AFTER,
        glue=True,
    ),
    _shape(
        "aws-secret-key",
        _AWS_SECRET_WORDS,
        r"(?i:(?:aws_?)?secret_?access_?key)[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9+/=_-])",
        group=1,
        at=lambda s, p: p,
    ),
    _shape(
        "aws-session-token",
        _AWS_SESSION_WORDS,
        r"(?i:aws_session_token|aws_security_token|x-amz-security-token|sessiontoken)[\"']?\s*[:=]\s*"
        r"[\"']?([A-Za-z0-9/+]{16,4096}={0,2})(?![A-Za-z0-9+/=_-])",
        group=1,
        at=_header,
    ),
    *(
        _shape(
            "aws-session-token",
            (start.lower(),),
            start + f"(?<![A-Za-z0-9+/=_-]{start})" + r"[A-Za-z0-9/+]{80,4096}+={0,2}(?![A-Za-z0-9+/=_-])",
        )
        for start in _BLOB_SHAPES
    ),
    _shape("google-api-key", ("aiza",), "AIza" + _left("AIza") + "[0-9A-Za-z_-]{35}" + _NOT_AFTER, glue=True),
    _shape(
        "azure-storage-key",
        ("accountkey=", "sharedaccesskey=", "sharedsecretvalue="),
        r"(?i:AccountKey|SharedAccessKey|SharedSecretValue)=([A-Za-z0-9+/]{20,1024}+={0,2})",
        group=1,
        at=lambda s, p: p,
    ),
    _shape(
        "bearer-token",
        ("bearer",),
        r"(?i:bearer)[ \t]+([A-Za-z0-9._~+/-]{8,4096}+=*)(?![A-Za-z0-9._~+/=-])",
        group=1,
        at=_after_auth,
    ),
    _shape(
        "bearer-token",
        ("bearer",),
        r"(?i:bearer)[ \t]+([A-Za-z0-9._~+/-]{16,4096}+=*)(?![A-Za-z0-9._~+/=-])",
        group=1,
        check=_tokenish,
        at=_at_word,
    ),
    _shape(
        "basic-auth",
        ("basic",),
        r"(?i:basic)[ \t]+([A-Za-z0-9+/]{8,4096}+={0,2})(?![A-Za-z0-9+/=_-])",
        group=1,
        check=_basic,
        at=_at_word,
    ),
    _shape(
        "api-key-header",
        _HEADER_WORDS,
        rf"(?i:{_alternation(_HEADER_WORDS)})[\"']?[ \t]*:[ \t]*[\"']?"
        r"(?:(?i:token|apikey|sso-key|digest)[ \t]+)?([A-Za-z0-9._~+/=-]{8,4096}+)(?![A-Za-z0-9._~+/=-])",
        group=1,
        check=_bare_value,
        at=_header,
    ),
    _shape(
        "url-password",
        ("://",),
        r"[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:/?#@\"'<>\[\]]*:([^\s/?#\"'<>]+)@",
        group=1,
        at=_scheme,
    ),
    _shape(
        "url-secret",
        _QUERY_WORDS,
        rf"(?i:{_alternation(_QUERY_WORDS)})=([^&#\s\"'<>]+)",
        group=1,
        check=_real_value,
        at=_in_query,
    ),
    # "password": "…", password = '…', api_key: "…" (quoted, any case; \" in double-encoded text)
    _shape(
        "password",
        (*_NAME_WORDS, "token"),
        rf"(?i:{_WORDS}|token)\\?[\"']?[ \t]*(?:=|:|=>|:=)[ \t]*" + _VALUE_Q,
        group=2,
        check=_real_value,
        at=_at_word,
    ),
    # PASSWORD=…, export API_TOKEN=…, DB_PASSWORD: … (environment and compose style, upper case)
    _shape(
        "password",
        (*_NAME_WORDS, "token"),
        rf"(?:{_ENV_WORDS})[ \t]*[=:][ \t]*([^\s\"'`;&|()\[\]]++)(?![(\[])",
        group=1,
        check=_bare_value,
        at=_at_word,
    ),
    # password=… with no spaces (a DSN, an ini file, a query without ?)
    _shape(
        "password",
        _NAME_WORDS,
        rf"(?i:{_WORDS})=([^\s\"'`;&|,()\[\]{{}}<>]++)(?![(\[])",
        group=1,
        check=_bare_value,
        at=_at_word,
    ),
    # --password x, --api-key=x (a command's flags)
    _shape(
        "password",
        _FLAG_WORDS,
        rf"(?i:{_alternation(_FLAG_WORDS)})[ =]([^\s\"'`;&|]+)",
        group=1,
        check=_real_value,
        at=_flag,
    ),
    # password: hunter2 at the start of a line (YAML, ini), the rest of the line being the value
    _shape(
        "password",
        _NAME_WORDS,
        rf"(?m)(?i:{_WORDS})[ \t]*[:=][ \t]*([^\s\"'|>&#=(\[,][^\s=(\[,]*)[ \t]*$",
        group=1,
        check=_bare_value,
        at=_line_start,
    ),
)

_SHORT: Final = 8  # shorter strings hold no shape (known values are looked for in every string)
_GITLEAKS_SHORT: Final = 10  # every gitleaks rule needs this many characters (tests check it)

# A long string of the base64/base64url alphabet with at most trailing padding is one opaque token
# (an encrypted reasoning blob, an image): only known values, and an AWS session token's fixed
# start, are looked for in it.
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
_GLUED: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-")
_GLUE_LEFT: Final = re.compile(r"(?:[A-Za-z0-9]+_)+\Z")


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


def _glued_ok(s: str, start: int) -> bool:
    """A key starting at ``start`` right after ``_``: allowed only after an identifier (``KEY_``,
    ``token_``) of at most 64 characters that itself stands alone, never inside a base64 run."""
    if start == 0 or s[start - 1] != "_":
        return True
    left = s[max(0, start - 65) : start]
    m = _GLUE_LEFT.search(left)
    if m is None or (m.start() == 0 and start > 64):
        return False
    before = start - len(left) + m.start() - 1
    return before < 0 or s[before] not in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_"


@dataclass(slots=True)
class _Index:
    """One Aho-Corasick automaton over every shape's needles and every rule's keywords."""

    automaton: Any
    rules: RuleSet
    shapes_by_needle: dict[str, list[int]] = field(default_factory=dict)
    rules_by_keyword: dict[str, list[int]] = field(default_factory=dict)


@cache
def _index() -> _Index:
    import ahocorasick  # C extension; imported when the first string is redacted

    rules = gitleaks()
    automaton = ahocorasick.Automaton()
    index = _Index(automaton=automaton, rules=rules)
    for i, shape in enumerate(SHAPES):
        for needle in shape.needles:
            index.shapes_by_needle.setdefault(needle, []).append(i)
    for j, rule in enumerate(rules.rules):
        for keyword in rule.keywords:
            index.rules_by_keyword.setdefault(keyword, []).append(j)
    for word in {*index.shapes_by_needle, *index.rules_by_keyword}:
        automaton.add_word(word, word)
    automaton.make_automaton()
    return index


class _Walk:
    __slots__ = ("counts", "index", "known", "unknown")

    def __init__(self, known: Known) -> None:
        self.counts: dict[str, int] = {}
        self.unknown = 0
        self.known = known
        self.index = _index()

    def _count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def text(self, s: str) -> str:
        if self.known:
            s = self._known(s)
        if len(s) < _SHORT:
            return s
        if len(s) >= _BLOB_MIN and _BLOB.fullmatch(s) and not s.startswith(_BLOB_SHAPES):
            # one token: the whole string (its padding aside)
            self.unknown += _looks_random(s)
            return s
        found = self._find(s)
        if found:
            hits = set(found)
            s = self._shapes(s, hits, found)
            if len(s) >= _GITLEAKS_SHORT:
                s = self._rules(s, hits)
        self.unknown += sum(_looks_random(m.group(0)) for m in _TOKEN.finditer(s))
        return s

    def _find(self, s: str) -> dict[str, list[int]]:
        """Where each needle and keyword starts in ``s`` (case folded)."""
        low = s.lower()
        found: dict[str, list[int]] = {}
        for end, word in self.index.automaton.iter(low):
            found.setdefault(word, []).append(end - len(word) + 1)
        if len(low) != len(s) and found:
            # case folding changed the length (non-ASCII): look the words up again in s itself
            found = {w: [m.start() for m in re.finditer(re.escape(w), s, re.IGNORECASE)] for w in found}
        return found

    def _known(self, s: str) -> str:
        known = self.known
        for value in (*known.values, *known.forms):  # the values first, then their encoded forms
            if value in s:
                self._count(CREDENTIAL, s.count(value))
                s = s.replace(value, marker(CREDENTIAL))
        if may_hide(s, known.probes):
            spans = hidden_spans(s, known.values)
            if spans:
                self._count(CREDENTIAL, len(spans))
                mark = marker(CREDENTIAL)
                for start, end in reversed(spans):
                    s = s[:start] + mark + s[end:]
        return s

    def _shapes(self, s: str, hits: set[str], found: dict[str, list[int]]) -> str:
        # markers hold no needle of a shape that could match them, so one lookup serves all
        run = sorted({i for word in hits for i in self.index.shapes_by_needle.get(word, ())})
        found_in = s
        for i in run:
            shape = SHAPES[i]
            if shape.at is None:
                s = shape.regex.sub(self._replacer(shape, s), s)
                continue
            if found_in is not s:
                found, found_in = self._find(s), s  # an earlier shape moved the words
            s = self._anchored(shape, s, found)
        return s

    def _anchored(self, shape: _Shape, s: str, found: dict[str, list[int]]) -> str:
        """An anchored shape's regex, tried only where one of its words starts."""
        assert shape.at is not None
        starts = sorted(
            {q for word in shape.needles for p in found.get(word, ()) if (q := shape.at(s, p)) is not None}
        )
        if not starts:
            return s
        repl = self._replacer(shape, s)
        out: list[str] = []
        last = 0
        for q in starts:
            if q < last:
                continue
            m = shape.regex.match(s, q)
            if m is None:
                continue
            new = repl(m)
            if new == m.group(0):
                continue
            out.append(s[last : m.start()])
            out.append(new)
            last = m.end()
        if not out:
            return s
        out.append(s[last:])
        return "".join(out)

    def _replacer(self, shape: _Shape, subject: str) -> _Repl:
        mark = marker(shape.name)

        def repl(m: re.Match[str]) -> str:
            secret = m.group(shape.group)
            if (
                secret.startswith("[redacted:")  # a marker already (this shape's or another's)
                or (shape.check is not None and not shape.check(secret))
                or (shape.glue and not _glued_ok(subject, m.start(0)))
            ):
                return m.group(0)
            self._count(shape.name)
            return _splice(m, shape.group, mark)

        return repl

    def _rules(self, s: str, hits: set[str]) -> str:
        rules = self.index.rules
        run = sorted({j for word in hits for j in self.index.rules_by_keyword.get(word, ())})
        for j in run:
            rule = rules.rules[j]
            s = rule.regex.sub(self._rule_replacer(rules, rule, s), s)
        return s

    def _rule_replacer(self, rules: RuleSet, rule: Rule, subject: str) -> _Repl:
        mark = marker(rule.id)

        def repl(m: re.Match[str]) -> str:
            start, end = rule.secret_span(m)
            secret = subject[start:end]
            if not secret or "[redacted:" in secret:
                return m.group(0)
            if start and (subject[start - 1] in _GLUED or not _glued_ok(subject, start)):
                return m.group(0)  # inside a longer token (a base64 run), as gitleaks' \\b-less rules allow
            line_start = subject.rfind("\n", 0, start) + 1
            line_end = subject.find("\n", end)
            line = subject[line_start : line_end if line_end >= 0 else len(subject)]
            if rules.allowed(rule, secret, m.group(0), line):
                return m.group(0)
            self._count(rule.id)
            return _splice(m, (start, end), mark)

        return repl

    def value(self, v: Any) -> Any:
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, dict):
            out: dict[Any, Any] = {}
            for k, item in v.items():
                key = self.text(k) if isinstance(k, str) else k
                if isinstance(k, str) and isinstance(item, str) and _named_secret(k, item):
                    name = "aws-secret-key" if _aws_secret_name(k) else "password"
                    if self.known:
                        self._known(item)  # counted as what it is, if it is a held credential
                    self._count(name)
                    out[key] = marker(name)
                    continue
                out[key] = self.value(item)
            return out
        if isinstance(v, list | tuple):
            return [self.value(item) for item in v]
        return v


def _splice(m: re.Match[str], group: int | tuple[int, int], mark: str) -> str:
    """The match with ``group`` (or a span of the subject) replaced by ``mark``."""
    if group == 0:
        return mark
    start, end = m.span(group) if isinstance(group, int) else group
    whole = m.group(0)
    base = m.start(0)
    return whole[: start - base] + mark + whole[end - base :]


# dict keys whose string value is an AWS secret access key (compared without case, _ and -)
_AWS_SECRET_KEYS: Final = frozenset({"awssecretaccesskey", "secretaccesskey", "awssecretkey"})
_AWS_SECRET_VALUE: Final = re.compile(r"[A-Za-z0-9/+]{40}")


def _aws_secret_name(k: str) -> bool:
    return k.lower().replace("_", "").replace("-", "") in _AWS_SECRET_KEYS


def _named_secret(k: str, item: str) -> bool:
    """A dict entry whose key names a secret (``password``, ``api_key``, ``client_secret``…)."""
    if _aws_secret_name(k):
        return _AWS_SECRET_VALUE.fullmatch(item) is not None
    return (
        len(k) <= 64
        and _SECRET_NAME.fullmatch(k) is not None
        and _real_value(item)
        and not item.startswith("[redacted:")
    )


def redact(value: Any, known: Known = NO_KNOWN) -> tuple[Any, RedactionReport]:
    """Return ``value`` with every credential replaced, and what was done.

    Pure: no I/O, the input is not modified. Lists and tuples come back as lists.
    """
    walk = _Walk(known)
    out = walk.value(value)
    report = RedactionReport(replaced=tuple(sorted(walk.counts.items())), unknown_entropy=walk.unknown)
    return out, report


def redact_text(text: str, known: Known = NO_KNOWN) -> str:
    """One string, redacted (for what is shown rather than logged)."""
    return _Walk(known).text(text)


def redact_held(text: str, known: Known) -> str:
    """``text`` cleared of the held values (and their encoded forms) only: what a reader of a log
    redacted when it was written needs for a value that became a credential later (ADR 0332)."""
    return _Walk(known)._known(text) if known and text else text


_E = TypeVar("_E", bound=BaseException)


def redact_error(exc: _E, known: Known = NO_KNOWN) -> _E:
    """``exc`` with its message (and a provider error's ``body``) redacted, in place: a provider
    that echoes the key it was sent puts it in both."""
    message = str(exc)
    clean = redact_text(message, known)
    if clean != message:
        exc.args = (clean,)
    body = getattr(exc, "body", None)
    if isinstance(body, str):
        exc.body = redact_text(body, known)  # type: ignore[attr-defined]
    return exc
