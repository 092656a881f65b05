"""Stream transcripts (written by hand from each provider's documented format) decoded to responses.

Each ``*.sse`` / ``*.ndjson`` under golden/<dialect>/ has an ``*.expect.json`` naming the model
entry and either the response (values.codec.response_to_json) or the error it must raise. Every
transcript is fed whole and in small chunks, which split lines, CRLFs and characters.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import nodwyn.errors as errors
from nodwyn.dialects import StreamEvent, dialect_for
from nodwyn.values.codec import response_to_json

from .cases import GOLDEN, entry, events

TRANSCRIPTS = sorted([*GOLDEN.rglob("*.sse"), *GOLDEN.rglob("*.ndjson")])


def _decode(path: Path, chunk: int | None) -> Any:
    expect = orjson.loads(path.with_suffix(".expect.json").read_bytes())
    settings = entry(**expect["settings"])
    dec = dialect_for(settings).decoder(settings.origin)
    for ev in events(path.read_bytes(), ndjson=path.suffix == ".ndjson", chunk=chunk):
        dec.feed(ev)
    return expect, dec


@pytest.mark.parametrize("chunk", [None, 1, 7, 64])
@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_transcript_decodes_as_expected(path: Path, chunk: int | None) -> None:
    expect = orjson.loads(path.with_suffix(".expect.json").read_bytes())
    if "error" in expect:
        cls = getattr(errors, expect["error"]["class"])
        with pytest.raises(errors.ProviderError) as info:
            _, dec = _decode(path, chunk)
            dec.finish()
        assert type(info.value) is cls
        assert str(info.value) == expect["error"]["message"]
        assert "\n" not in str(info.value)
        return
    _, dec = _decode(path, chunk)
    assert dec.complete
    assert response_to_json(dec.finish()) == expect["response"]


def test_crlf_framing_decodes_the_same() -> None:
    path = GOLDEN / "anthropic" / "thinking_tool_use.sse"
    expect = orjson.loads(path.with_suffix(".expect.json").read_bytes())
    raw = path.read_bytes().replace(b"\n", b"\r\n")
    settings = entry(**expect["settings"])
    for chunk in (None, 1, 3):
        dec = dialect_for(settings).decoder(settings.origin)
        for ev in events(raw, ndjson=False, chunk=chunk):
            dec.feed(ev)
        assert response_to_json(dec.finish()) == expect["response"]


def test_incomplete_responses_stream_says_so_before_finish() -> None:
    path = GOLDEN / "responses" / "no_terminal.sse"
    _, dec = _decode(path, None)
    assert dec.complete is False


@pytest.mark.parametrize(
    "fields",
    [
        {"api": "ollama"},
        {"api": "openai-chat"},
        {"api": "responses"},
        {"api": "anthropic"},
    ],
)
def test_an_event_that_is_not_an_object_names_the_likely_cause(fields: dict[str, str]) -> None:
    settings = entry(**fields)
    dec = dialect_for(settings).decoder(settings.origin)
    with pytest.raises(errors.DecodeError) as err:
        dec.feed(StreamEvent(event=None, data='["not", "an", "object"]'))
    assert "is not a JSON object; the server does not speak this API" in str(err.value)
    with pytest.raises(errors.DecodeError, match="the reply is not a JSON object"):
        dialect_for(settings).decode_body(b"[]", settings.origin)
