"""Text made safe for a terminal: control characters shown, never obeyed.

A model's text, a tool's output, a shell command or a log's contents may carry control characters:
``\\r`` and ``ESC [2K`` make ``rm -rf ~`` display as a harmless command, ``ESC ]0;`` sets the
window title, ``ESC ]52;`` writes the clipboard. Everything nodwyn shows a person passes through
``escape_controls``, which spells each such character out (``\\x1b``, ``\\r``, ``\\x9b``,
``\\u202e``) and keeps the rest. The log keeps the bytes as they came; only what is shown changes.

Escaped: C0 controls except tab (and newline unless ``newlines=False``), DEL, C1 controls
(``U+0080``–``U+009F``, where ``U+009B`` is a one-character CSI) and the bidirectional overrides
and isolates (``U+202A``–``U+202E``, ``U+2066``–``U+2069``) that reorder what is displayed.
"""

from __future__ import annotations

from typing import Final

_NAMED: Final = {0x0D: "\\r", 0x0A: "\\n", 0x09: "\\t", 0x1B: "\\x1b"}


def _spelled(code: int) -> str:
    if code in _NAMED:
        return _NAMED[code]
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


_CONTROLS: Final = [
    *range(0x00, 0x20),
    0x7F,
    *range(0x80, 0xA0),
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
]
_TABLE: Final = {c: _spelled(c) for c in _CONTROLS if c not in (0x09, 0x0A)}
_TABLE_ONE_LINE: Final = {c: _spelled(c) for c in _CONTROLS if c != 0x09}


def escape_controls(text: str, *, newlines: bool = True) -> str:
    """``text`` with every control character spelled out; newlines kept unless ``newlines=False``."""
    return text.translate(_TABLE if newlines else _TABLE_ONE_LINE)


_JSON_TABLE: Final = {c: f"\\u{c:04x}" for c in _CONTROLS if c >= 0x7F}


def escape_json_controls(line: str) -> str:
    """A JSON text with DEL, C1 and bidi controls as ``\\uXXXX`` escapes (JSON escapes the rest)."""
    return line.translate(_JSON_TABLE)
