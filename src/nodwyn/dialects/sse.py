"""Incremental stream framing over bytes chunks: Server-Sent Events and NDJSON.

Pure parsers (sans-I/O): the transport feeds whatever chunks the network gave, in any split,
and gets back the complete events so far. Lines may end in LF, CRLF or CR, a CRLF may be split
across chunks, and a multi-byte character may be split too (lines are decoded whole).
"""

from __future__ import annotations

import re

from nodwyn.dialects.wire import StreamEvent
from nodwyn.errors import DecodeError

_EOL = re.compile(rb"\r\n|\r|\n")


class _Lines:
    """Splits bytes into lines on LF, CRLF or CR, holding back an unfinished line.

    Linear in the bytes fed, however long a line is: each chunk is searched once, and the pieces
    of an unfinished line are kept apart and joined once, when its end comes."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []  # the unfinished line so far
        self._cr = False  # the last chunk ended in CR: an LF starting the next one belongs to it

    def feed(self, chunk: bytes) -> list[bytes]:
        if not chunk:
            return []
        if self._cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._cr = False
        if not chunk:
            return []
        lines = _EOL.split(chunk)
        tail = lines.pop()
        if lines and self._parts:
            self._parts.append(lines[0])
            lines[0] = b"".join(self._parts)
            self._parts = []
        if tail:
            self._parts.append(tail)
        self._cr = chunk.endswith(b"\r")
        return lines

    def rest(self) -> bytes:
        rest = b"".join(self._parts)
        self._parts = []
        self._cr = False
        return rest


def _text(line: bytes) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(f"stream line is not UTF-8 ({exc}): {line[:60]!r}") from exc


class SseParser:
    """Server-Sent Events as the WHATWG spec frames them: ``event:``/``data:`` fields, a blank
    line dispatches, ``:`` lines are comments (e.g. OpenRouter's ``: OPENROUTER PROCESSING``),
    several ``data:`` lines join with LF. ``id`` and ``retry`` are read and ignored."""

    def __init__(self) -> None:
        self._lines = _Lines()
        self._event: str | None = None
        self._data: list[str] = []
        self._first = True

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        for raw in self._lines.feed(chunk):
            line = _text(raw)
            if self._first:
                self._first = False
                line = line.removeprefix("\ufeff")
            if line == "":
                if self._data:
                    out.append(StreamEvent(event=self._event, data="\n".join(self._data)))
                self._event = None
                self._data = []
                continue
            if line.startswith(":"):
                continue
            name, sep, value = line.partition(":")
            if sep and value.startswith(" "):
                value = value[1:]
            if name == "data":
                self._data.append(value)
            elif name == "event":
                self._event = value
        return out

    def close(self) -> list[StreamEvent]:
        """End of stream. An event not ended by a blank line is still dispatched: servers that
        close right after their last ``data:`` line are common, and the decoder judges whether
        the reply is complete."""
        rest = self._lines.rest()
        return self.feed(rest + b"\n\n") if rest else self.feed(b"\n")


class NdjsonParser:
    """One JSON value per line (Ollama). Blank lines are skipped; a last line without its LF
    is given at ``close``. Lines are returned as text; the decoder parses them."""

    def __init__(self) -> None:
        self._lines = _Lines()

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        for raw in self._lines.feed(chunk):
            line = _text(raw).strip()
            if line:
                out.append(StreamEvent(event=None, data=line))
        return out

    def close(self) -> list[StreamEvent]:
        rest = _text(self._lines.rest()).strip()
        return [StreamEvent(event=None, data=rest)] if rest else []
