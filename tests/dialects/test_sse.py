"""The stream framers: any split of the bytes gives the same events."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodwyn.dialects import NdjsonParser, SseParser, StreamEvent
from nodwyn.errors import DecodeError

from .cases import events

RAW = (
    "\ufeff: comment\r\n"
    "event: a\r\n"
    'data: {"x": "é😀"}\r\n'
    "\r\n"
    "data:no space\n"
    "data:  two spaces\n"
    "id: 7\n"
    "retry: 10\n"
    "\n"
    ": OPENROUTER PROCESSING\r"
    "\r"
    "event: b\r"
    "data: cr only\r"
    "\r"
    "event: lonely\n"
    "\n"
    "data: [DONE]\n"
).encode()
EXPECTED = [
    StreamEvent(event="a", data='{"x": "é😀"}'),
    StreamEvent(event=None, data="no space\n two spaces"),
    StreamEvent(event="b", data="cr only"),
    StreamEvent(event=None, data="[DONE]"),  # dispatched at close though no blank line followed
]


@pytest.mark.parametrize("chunk", [None, 1, 2, 3, 5, 17])
def test_sse_framing(chunk: int | None) -> None:
    assert events(RAW, ndjson=False, chunk=chunk) == EXPECTED


@given(st.lists(st.integers(1, len(RAW)), max_size=12))
def test_sse_any_split(cuts: list[int]) -> None:
    p = SseParser()
    out: list[StreamEvent] = []
    last = 0
    for c in sorted(set(cuts)):
        out += p.feed(RAW[last:c])
        last = c
    out += p.feed(RAW[last:])
    out += p.close()
    assert out == EXPECTED


def test_ndjson_lines() -> None:
    raw = b'{"a":1}\r\n\n  \n{"b":"\xc3\xa9"}\n{"c":3}'
    for chunk in (None, 1, 4):
        assert events(raw, ndjson=True, chunk=chunk) == [
            StreamEvent(event=None, data='{"a":1}'),
            StreamEvent(event=None, data='{"b":"é"}'),
            StreamEvent(event=None, data='{"c":3}'),
        ]


def test_bad_utf8_is_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="not UTF-8"):
        SseParser().feed(b"data: \xff\xfe\n\n")
    with pytest.raises(DecodeError, match="not UTF-8"):
        NdjsonParser().feed(b"\xff\n")


def test_a_cr_at_a_chunk_end_does_not_eat_a_blank_line_at_close() -> None:
    p = SseParser()
    assert p.feed(b"data: x\r") == []
    assert p.close() == [StreamEvent(event=None, data="x")]


def test_empty_chunks_keep_the_split_crlf_state() -> None:
    p = SseParser()
    out = p.feed(b"data: a\r") + p.feed(b"") + p.feed(b"\n") + p.feed(b"data: b\n") + p.feed(b"\n")
    assert out == [StreamEvent(event=None, data="a\nb")]


@pytest.mark.parametrize("parser", [SseParser, NdjsonParser])
def test_a_long_line_in_small_chunks_is_framed_in_linear_time(parser: type[SseParser | NdjsonParser]) -> None:
    """Re-joining the held-back line on every chunk made this quadratic (a 16 MB
    line took 44 s); 32 MB in 4 KB chunks is 8,192 chunks, seconds only when each is handled once."""
    import time

    size, piece = 32 << 20, 4096
    p = parser()
    start = time.perf_counter()
    out = p.feed(b'data: "')
    block = b"x" * piece
    for _ in range(size // piece):
        out += p.feed(block)
    out += p.feed(b'"\n\n') + p.close()
    assert time.perf_counter() - start < 5
    (only,) = out
    assert len(only.data) == size + 2 + (0 if parser is SseParser else len("data: "))
