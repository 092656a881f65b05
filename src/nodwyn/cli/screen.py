"""What the person sees, cleared of credentials and of control characters.

``shown(text)`` is the one filter for text nodwyn did not write itself (a model's reply, a tool's
output, a command, an error a provider sent, a log's contents): credentials are redacted (the
values nodwyn holds, which ``hold`` sets when a session opens, and every shape the log redacts),
then control characters are spelled out (``cli.terminal``). ``Stream`` does the same for a reply
as it streams: ``log.Holdback`` lets text out as it comes, holding back only what could still
become a secret (the trailing run of non-blank characters, an open quoted value after a secret's
name, a private key block until its END line), redacted with the context already shown (ADR 0430).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Final

from nodwyn.cli.terminal import escape_controls, escape_json_controls
from nodwyn.log import NO_KNOWN, Holdback, Known, redact, redact_text
from nodwyn.values.events import Event

_HELD: list[Known] = [NO_KNOWN]


def hold(known: Known) -> None:
    """The credential values this process holds (set when a session opens)."""
    _HELD[0] = known


def hold_configured(env: Mapping[str, str] = os.environ) -> None:
    """Hold the credentials config.toml and the keychain name, for a command that opens no session
    (``log``, ``replay``): an old log may hold a value the redaction of its time did not know."""
    from nodwyn.compose import held_values, load_config
    from nodwyn.errors import NodwynError

    with contextlib.suppress(NodwynError):  # no config: only the shapes
        hold(held_values(env, load_config(env)))


def json_safe(line: str) -> str:
    """A JSON line for a terminal: JSON escapes C0 controls itself, not DEL, C1 or bidi controls."""
    return escape_json_controls(redacted(line))


def held() -> Known:
    return _HELD[0]


def redacted(text: str) -> str:
    """``text`` without credentials (for JSON output, which escapes control characters itself)."""
    return redact_text(text, _HELD[0]) if text else text


def redacted_events(events: Iterable[Event]) -> list[Event]:
    """Events as a reader may pass them on (an export, a file, a pipe): every payload redacted
    again with the credentials held now, so a value logged before it became one is not shown."""
    known = _HELD[0]
    return [replace(e, data=redact(e.data, known)[0]) for e in events]


def shown(text: str, *, newlines: bool = True) -> str:
    """``text`` as it may be shown: credentials redacted, control characters spelled out."""
    return escape_controls(redacted(text), newlines=newlines)


class Stream:
    """A streamed reply, let out as it comes through ``log.Holdback`` (only what could still
    become a secret is held back), control characters spelled out."""

    def __init__(self) -> None:
        self._held = Holdback(_HELD[0])

    def feed(self, fragment: str) -> str:
        """What may be shown now, keeping the rest for later."""
        return escape_controls(self._held.feed(fragment))

    def flush(self) -> str:
        """The rest, at the end of the reply."""
        return escape_controls(self._held.flush())

    @property
    def open(self) -> bool:
        return self._held.pending


# -- a command to approve, shown so that nothing in it hides (issue 21, item 4; ADR 0354) --------

_SPACE_RUN: Final = 3  # this many ASCII spaces in a row or more are counted, not drawn
_SAME_RUN: Final = 3  # this many of one escaped character in a row or more are counted
_BLANK_LOOKING: Final = frozenset({0x2800, 0x3164, 0x115F, 0x1160, 0xFFA0, 0x180E, 0x034F})


def _invisible(ch: str) -> bool:
    """A character that draws as nothing or as a blank, other than one ASCII space: other spaces
    (U+00A0, U+3000, ...), format and zero-width characters, line separators, tabs, the braille
    blank and the Hangul fillers."""
    import unicodedata

    code = ord(ch)
    if code == 0x20:
        return False
    if code < 0x20 or code == 0x7F or code in _BLANK_LOOKING:
        return True
    return unicodedata.category(ch) in ("Zs", "Zl", "Zp", "Cf", "Cc", "Co", "Cn")


def _name(ch: str) -> str:
    code = ord(ch)
    return {0x09: "tab", 0x0A: "newline", 0x0D: "CR"}.get(code, f"U+{code:04X}")


def visible_command(text: str) -> str:
    """``text`` with every blank or invisible run made visible: runs of three or more spaces as
    ``⟨N spaces⟩``; every other blank, control or format character spelled (``\\u3000``), a run
    of three or more of one as ``⟨U+3000 ×3000⟩``. Credentials are redacted first."""
    text = redacted(text)
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        j = i
        while j < n and text[j] == ch:
            j += 1
        run = j - i
        if ch == " ":
            out.append(f"⟨{run} spaces⟩" if run >= _SPACE_RUN else " " * run)
        elif _invisible(ch):
            spelled = escape_controls(ch, newlines=False)
            if spelled == ch:
                spelled = f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}"
            out.append(f"⟨{_name(ch)} ×{run}⟩" if run >= _SAME_RUN else spelled * run)
        else:  # the markers' own brackets are spelled, so a command cannot forge a count
            plain = escape_controls(text[i:j], newlines=False)
            out.append(plain.replace("⟨", "\\u27e8").replace("⟩", "\\u27e9"))
        i = j
    return "".join(out)


def folded(text: str, width: int) -> list[str]:
    """``text`` cut into lines of at most ``width`` characters (a long command shown whole)."""
    width = max(20, width)
    return [text[k : k + width] for k in range(0, len(text), width)] or [""]


def approval_lines(tool: str, what: str, where: str | None, width: int) -> tuple[list[str], str]:
    """The lines that show what an approval allows, and the question that ends it. The command is
    shown whole (folded, never cut), every blank run visible, with its length; the question
    repeats its start, so that a command longer than the screen cannot scroll its start away."""
    shown_what = visible_command(what)
    head = f"{shown(tool, newlines=False)}" + (f" ({where})" if where else "")
    head += f", {len(what):,} characters:" if len(what) != len(shown_what) or len(what) > 60 else ":"
    lines = [head, *("  " + line for line in folded(shown_what, width - 2))]
    start = shown_what[:40] + ("…" if len(shown_what) > 40 else "")
    return lines, f"allow {shown(tool, newlines=False)} `{start}`?"
