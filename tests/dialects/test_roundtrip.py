"""A reply decoded and sent back goes out as it came; non-streamed replies decode like streams."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from nodwyn.dialects import dialect_for
from nodwyn.errors import ProviderUnavailable
from nodwyn.values.codec import response_to_json
from nodwyn.values.content import AssistantMessage, Message, ToolMessage
from nodwyn.values.model import ModelEntry
from nodwyn.values.request import Request, Response, Timings, Usage

from .cases import FS_READ, GOLDEN, entry, events, user


def _decode_golden(name: str) -> tuple[ModelEntry, Response, bytes]:
    path = GOLDEN / name
    expect = orjson.loads(path.with_suffix(".expect.json").read_bytes())
    s = entry(**expect["settings"])
    dec = dialect_for(s).decoder(s.origin)
    raw = path.read_bytes()
    for ev in events(raw, ndjson=path.suffix == ".ndjson"):
        dec.feed(ev)
    return s, dec.finish(), raw


def _send_back(s: ModelEntry, r: Response) -> dict[str, Any]:
    msgs: list[Message] = [
        user("q"),
        AssistantMessage(text=r.text, thinking=r.thinking, calls=r.calls, blocks=r.blocks),
        *(ToolMessage(call_id=c.id, name=c.name, text="ok") for c in r.calls),
    ]
    w = dialect_for(s).encode(
        Request(system="", tools=(FS_READ,), messages=tuple(msgs), max_output=99), session_key=None
    )
    assert w.body is not None
    return w.body


def test_anthropic_blocks_go_back_as_they_came_in_their_place() -> None:
    s, r, _ = _decode_golden("anthropic/thinking_tool_use.sse")
    body = _send_back(s, r)
    assert body["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "Need to read a.py first.", "signature": "EqQBCkYIBxgCKkA1"},
        {"type": "text", "text": "Reading both."},
        {"type": "tool_use", "id": "toolu_01", "name": "fs_read", "input": {"path": "a.py"}},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
        {"type": "tool_use", "id": "toolu_02", "name": "fs_read", "input": {"path": "b.py"}},
    ]
    assert body["thinking"] == {
        "type": "adaptive",
        "block_binding": {"prefix_mismatch_behavior": "drop_block"},
    }


def test_responses_reasoning_item_goes_back_unchanged_before_its_call() -> None:
    s, r, raw = _decode_golden("responses/keep_reasoning.sse")
    body = _send_back(s, r)
    items = body["input"]
    assert isinstance(items, list)
    assert [i.get("type") for i in items] == ["message", "reasoning", "function_call", "function_call_output"]
    assert orjson.dumps(items[1]) == r.blocks[0].data.encode()
    # the bytes are the item as response.output_item.done carried it
    assert b'"item":' + orjson.dumps(items[1]) in raw
    assert "id" not in items[2]  # function calls never carry their fc_ id
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"context": "all_turns"}


def test_responses_without_keep_reasoning_keeps_no_block() -> None:
    path = GOLDEN / "responses/keep_reasoning.sse"
    s = entry(api="responses", model="gpt-6.1-sol")
    dec = dialect_for(s).decoder(s.origin)
    for ev in events(path.read_bytes(), ndjson=False):
        dec.feed(ev)
    r = dec.finish()
    assert r.blocks == () and r.thinking == "Look first."
    body = _send_back(s, r)
    assert [i["type"] for i in body["input"]] == ["message", "function_call", "function_call_output"]
    assert "include" not in body and "reasoning" not in body


def test_ollama_object_arguments_keep_their_key_order() -> None:
    s, r, _ = _decode_golden("ollama/thinking_tool_call.ndjson")
    body = _send_back(s, r)
    call = body["messages"][1]["tool_calls"][0]["function"]
    assert orjson.dumps(call["arguments"]) == b'{"path":"a.txt","lines":{"from":1,"to":20}}'


def test_decode_body_ollama() -> None:
    s = entry(api="ollama", model="qwen3:8b")
    body = (
        b'{"model":"qwen3:8b","message":{"role":"assistant","content":"Hi","thinking":"t"},"done":true,'
        b'"done_reason":"length","total_duration":2000000,"prompt_eval_count":10,"prompt_eval_duration":1000000,"eval_count":2}'
    )
    r = dialect_for(s).decode_body(body, s.origin)
    assert r == Response(
        text="Hi",
        thinking="t",
        usage=Usage(prompt_tokens=10, output_tokens=2),
        finish="length",
        model="qwen3:8b",
        timings=Timings(prefill_ms=1.0, total_ms=2.0),
    )


def test_decode_body_chat() -> None:
    s = entry(api="openai-chat")
    body = (
        b'{"id":"c","object":"chat.completion","model":"gpt-5.6","choices":[{"index":0,"message":{"role":"assistant",'
        b'"content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},'
        b'"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1500,"completion_tokens":5,"total_tokens":1505,'
        b'"prompt_tokens_details":{"cached_tokens":1408}}}'
    )
    r = dialect_for(s).decode_body(body, s.origin)
    assert response_to_json(r)["calls"] == [{"id": "call_1", "name": "f", "arguments": "{}"}]
    assert r.usage == Usage(prompt_tokens=1500, cached_tokens=1408, output_tokens=5)
    assert r.finish == "tool_calls"


def test_decode_body_responses_incomplete() -> None:
    s = entry(api="responses", keep_reasoning=True)
    body = orjson.dumps(
        {
            "id": "resp",
            "object": "response",
            "status": "incomplete",
            "model": "gpt-6.1-sol",
            "incomplete_details": {"reason": "max_output_tokens"},
            "output": [
                {
                    "id": "rs_1",
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": "a"}],
                    "encrypted_content": "e",
                },
                {
                    "id": "msg",
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Par", "annotations": []}],
                },
            ],
            "usage": {
                "input_tokens": 10,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 99,
                "output_tokens_details": {"reasoning_tokens": 90},
                "total_tokens": 109,
            },
        }
    )
    r = dialect_for(s).decode_body(body, s.origin)
    assert (r.text, r.thinking, r.finish) == ("Par", "a", "length")
    assert [b.type for b in r.blocks] == ["reasoning"]
    assert r.usage == Usage(prompt_tokens=10, cached_tokens=0, output_tokens=99, reasoning_tokens=90)


def test_decode_body_anthropic_with_input_transformations() -> None:
    s = entry(api="anthropic", model="claude-sonnet-5-5")
    body = orjson.dumps(
        {
            "id": "msg",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-5-5",
            "content": [
                {"type": "thinking", "thinking": "hm", "signature": "sig"},
                {"type": "tool_use", "id": "toolu_1", "name": "fs_read", "input": {"path": "x"}},
            ],
            "stop_reason": "tool_use",
            "input_transformations": [{"type": "thinking_dropped", "path": "messages.1.content.0"}],
            "usage": {
                "input_tokens": 5,
                "cache_read_input_tokens": 100,
                "cache_creation_input_tokens": 0,
                "output_tokens": 7,
            },
        }
    )
    r = dialect_for(s).decode_body(body, s.origin)
    assert r.calls[0].arguments == '{"path":"x"}'
    assert [(b.type, b.data, b.text, b.position) for b in r.blocks] == [("thinking", "sig", "hm", 0)]
    assert r.usage == Usage(prompt_tokens=105, cached_tokens=100, cache_write_tokens=0, output_tokens=7)
    assert r.notes == ("anthropic thinking_dropped at messages.1.content.0",)
    with pytest.raises(ProviderUnavailable, match="anthropic mid-stream \\(overloaded_error\\): Overloaded"):
        dialect_for(s).decode_body(
            b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', s.origin
        )


def test_responses_reasoning_text_stands_in_for_an_empty_summary() -> None:
    s = entry(api="responses")
    body = orjson.dumps(
        {
            "id": "r",
            "object": "response",
            "status": "completed",
            "model": "gpt-oss-120b",
            "output": [
                {
                    "id": "rs",
                    "type": "reasoning",
                    "summary": [],
                    "content": [
                        {"type": "reasoning_text", "text": "raw one"},
                        {"type": "reasoning_text", "text": "raw two"},
                    ],
                },
                {
                    "id": "m",
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "ok"}],
                },
            ],
        }
    )
    r = dialect_for(s).decode_body(body, s.origin)
    assert (r.thinking, r.text, r.usage) == ("raw one\n\nraw two", "ok", Usage())
