"""Encoded forms of the credential values nodwyn holds, found wherever they occur (ADR 0331).

A held value can reach a session in a form other than its own: base64 (a Kubernetes Secret,
``base64(user:value)`` in a docker config), hex, URL-encoding, JSON's ``\\u`` and ``\\/`` escapes,
or split over two lines. Two ways find them:

- ``forms_of(value)``: the fixed strings a value always becomes, looked for as plainly as the value
  itself. Base64 depends on where the value starts in the encoded bytes: for each of the three
  alignments, the characters that depend on the value's bytes alone (the ones at its edges, which
  also hold the neighbours' bits, are left out). That also finds the value inside
  ``base64(user:value)``. Hex in both cases; ``quote`` and JSON when they change the value.
- ``hidden_spans(s, needles)``: the parts of ``s`` that decode to a needle once ``\\uXXXX``, ``\\/``
  and ``%XX`` are decoded and a line break (with the blanks around it, a ``\\`` before it, or
  JSON's ``\\n`` in escaped text) is dropped. ``may_hide`` says in a few scans whether that is
  worth trying, so ordinary text costs almost nothing; the slow, exact pass runs only when a
  decoded view really holds a needle.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Final
from urllib.parse import quote

MIN_FORM: Final = 8  # shorter forms would hit ordinary text (as MIN_KNOWN does for values)

_ENCODERS: Final[tuple[Callable[[bytes], bytes], ...]] = (base64.b64encode, base64.urlsafe_b64encode)
_ESC: Final = re.compile(r"\\u([0-9a-fA-F]{4})|\\(/)")
_PCT: Final = re.compile(r"%([0-9A-Fa-f]{2})")
# a line break: a real one (after a "\\" continuation or not), or JSON's "\\n" in escaped text
_TOKEN: Final = re.compile(
    r"\\u([0-9a-fA-F]{4})|\\(/)|%([0-9A-Fa-f]{2})|[ \t]*(?:\\?\r?\n|(?:\\r)?\\n)[ \t]*"
)
_PROBE: Final = 4  # a value split once keeps its first or its last this many characters whole


def _base64_cores(raw: bytes) -> set[str]:
    out: set[str] = set()
    for k in range(3):
        start = -(-8 * k // 6)  # the first character holding none of the k bytes before
        end = 8 * (k + len(raw)) // 6  # past the last holding none of the bytes after
        for encode in _ENCODERS:
            out.add(encode(b"\0" * k + raw)[start:end].decode("ascii"))
    return out


def forms_of(value: str) -> set[str]:
    """The fixed strings ``value`` becomes when encoded (not the value itself)."""
    raw = value.encode("utf-8")
    out = _base64_cores(raw)
    out.update((raw.hex(), raw.hex().upper()))
    quoted = quote(value, safe="")
    out.update((quoted, re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), quoted)))
    out.add(json.dumps(value)[1:-1])
    out.add(json.dumps(value)[1:-1].replace("/", "\\/"))
    out.discard(value)
    return {f for f in out if len(f) >= MIN_FORM}


def probes_of(values: Iterable[str]) -> tuple[str, ...]:
    """What a value split over two lines still shows whole: its first and last characters."""
    return tuple(sorted({p for v in values for p in (v[:_PROBE], v[-_PROBE:])}))


def may_hide(s: str, probes: Sequence[str]) -> bool:
    """Whether ``s`` may hold a value escaped, percent-encoded or split over lines (cheap scans)."""
    if "\\" in s and ("\\u" in s or "\\/" in s):
        return True
    if "%" in s and _PCT.search(s) is not None:
        return True
    return ("\n" in s or "\\n" in s) and any(p in s for p in probes)


def _unescape(m: re.Match[str]) -> str:
    return "/" if m.group(2) else chr(int(m.group(1), 16))


def _fast_view(s: str) -> str:
    """``s`` decoded and with all blanks dropped: a superset check, at the speed of C."""
    view = _ESC.sub(_unescape, s) if "\\u" in s or "\\/" in s else s
    if "%" in view:
        view = _PCT.sub(lambda m: chr(int(m.group(1), 16)), view)
    if "\\n" in view:
        view = view.replace("\\r\\n", "\n").replace("\\n", "\n")
    if "\n" in view:
        view = "".join(view.replace("\\\n", "\n").split())
    return view


def hidden_spans(s: str, needles: Sequence[str]) -> list[tuple[int, int]]:
    """Spans of ``s`` that decode to one of ``needles`` (longest first), left to right, disjoint."""
    fast = _fast_view(s)
    wanted = [n for n in needles if n in fast]
    if not wanted:
        return []
    chars: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pos = 0
    for m in _TOKEN.finditer(s):
        chars.append(s[pos : m.start()])
        starts.extend(range(pos, m.start()))
        ends.extend(range(pos + 1, m.start() + 1))
        code = m.group(1) or m.group(3)  # \\uXXXX or %XX; else \\/, or a line break (the lines join)
        decoded = chr(int(code, 16)) if code else "/" if m.group(2) else ""
        if decoded:
            chars.append(decoded)
            starts.append(m.start())
            ends.append(m.end())
        pos = m.end()
    chars.append(s[pos:])
    starts.extend(range(pos, len(s)))
    ends.extend(range(pos + 1, len(s) + 1))
    view = "".join(chars)
    found: list[tuple[int, int]] = []
    for needle in wanted:
        at = view.find(needle)
        while at >= 0:
            found.append((starts[at], ends[at + len(needle) - 1]))
            at = view.find(needle, at + len(needle))
    found.sort()
    out: list[tuple[int, int]] = []
    for start, end in found:
        if out and start < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out
