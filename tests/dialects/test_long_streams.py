"""A long reply streamed in small deltas decodes in linear time. Appending each
piece to a str made 4 MB of tool arguments take 32 s (openai-chat) and 25 s (Anthropic); 16 MB in
1 KB deltas is 16,384 events, well under a second each way when every piece is handled once."""

from __future__ import annotations

import json
import time

import pytest

from nodwyn.dialects import dialect_for
from nodwyn.dialects.wire import StreamEvent
from nodwyn.values.model import Api, ModelEntry

PIECE = "x" * 1024
MB = 16


def _settings(api: Api) -> ModelEntry:
    return ModelEntry(name="x", api=api, model="m", context_size=8192, base_url="http://h")


def _chat(delta: dict[str, object], finish: str | None = None) -> StreamEvent:
    return StreamEvent(
        event=None, data=json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    )


def _anthropic(kind: str, **fields: object) -> StreamEvent:
    return StreamEvent(event=kind, data=json.dumps({"type": kind, **fields}))


def _openai_chat(field: str) -> tuple[list[StreamEvent], StreamEvent, list[StreamEvent]]:
    head = _chat({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": ""}}]})
    if field == "arguments":
        each = _chat({"tool_calls": [{"index": 0, "function": {"arguments": PIECE}}]})
    else:
        each = _chat({"content": PIECE})
    return [head], each, [_chat({}, "stop")]


def _anthropic_stream(field: str) -> tuple[list[StreamEvent], StreamEvent, list[StreamEvent]]:
    message = {"id": "m", "type": "message", "role": "assistant", "content": [], "model": "m", "usage": {}}
    block = (
        {"type": "tool_use", "id": "t", "name": "f", "input": {}}
        if field == "arguments"
        else {
            "type": field,
            field: "",
        }
    )
    delta = {
        "arguments": {"type": "input_json_delta", "partial_json": PIECE},
        "text": {"type": "text_delta", "text": PIECE},
        "thinking": {"type": "thinking_delta", "thinking": PIECE},
    }[field]
    head = [
        _anthropic("message_start", message=message),
        _anthropic("content_block_start", index=0, content_block=block),
    ]
    tail = [_anthropic("content_block_stop", index=0), _anthropic("message_stop")]
    return head, _anthropic("content_block_delta", index=0, delta=delta), tail


@pytest.mark.parametrize(
    ("api", "field"),
    [
        ("openai-chat", "arguments"),
        ("openai-chat", "text"),
        ("anthropic", "arguments"),
        ("anthropic", "text"),
        ("anthropic", "thinking"),
    ],
)
def test_a_long_reply_in_small_deltas_decodes_in_linear_time(api: Api, field: str) -> None:
    settings = _settings(api)
    decoder = dialect_for(settings).decoder(settings.origin)
    head, each, tail = (_openai_chat if api == "openai-chat" else _anthropic_stream)(field)
    start = time.perf_counter()
    for ev in head:
        decoder.feed(ev)
    for _ in range(MB * 1024):
        decoder.feed(each)
    for ev in tail:
        decoder.feed(ev)
    reply = decoder.finish()
    assert time.perf_counter() - start < 10
    got = {"arguments": reply.calls[0].arguments if reply.calls else "", "text": reply.text}
    got["thinking"] = reply.thinking
    assert len(got[field]) == MB * 1024 * len(PIECE)
