"""OpenRouter's reasoning_details, dialect side: each block goes back byte for byte on its message.

The window decides which messages carry a block; the dialect puts each block's array, byte for
byte, on its own message as ``reasoning_details`` and sends no reasoning text beside it.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from nodwyn.dialects import dialect_for
from nodwyn.dialects.openai_chat import merge_details
from nodwyn.errors import OriginError
from nodwyn.values.content import AssistantMessage, Message, ThinkingBlock, ToolMessage
from nodwyn.values.model import ModelEntry
from nodwyn.values.request import Request, Response

from .cases import FS_READ, KEY, entry, events, user

ROUTER = entry(api="openai-chat", family="openrouter", model="meta/muse-spark-1.3", server="openrouter")
OTHER = entry(api="openai-chat", family="openrouter", model="z-ai/glm-5.3-flash", server="openrouter")


def _chunk(delta: dict[str, object], finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
    c: dict[str, object] = {
        "id": "g",
        "model": ROUTER.model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        c["usage"] = usage
    return b"data: " + orjson.dumps(c) + b"\n\n"


def _reply(n: int, *, call: bool) -> bytes:
    """One streamed reply whose reasoning_details come in fragments (text, late signature, encrypted)."""
    out = _chunk(
        {
            "role": "assistant",
            "reasoning": f"step {n} ",
            "reasoning_details": [
                {"type": "reasoning.text", "text": f"step {n} ", "format": "anthropic-claude-v1", "index": 0}
            ],
        }
    )
    out += _chunk(
        {"reasoning": "<a&b>", "reasoning_details": [{"type": "reasoning.text", "text": "<a&b>", "index": 0}]}
    )
    out += _chunk({"reasoning_details": [{"type": "reasoning.text", "signature": f"sig{n}", "index": 0}]})
    out += _chunk(
        {"reasoning_details": [{"type": "reasoning.encrypted", "data": f"ZW5j{n}_-==", "index": 1}]}
    )
    if call:
        out += _chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": f"call_{n}",
                        "type": "function",
                        "function": {"name": "fs_read", "arguments": f'{{"path":"f{n}"}}'},
                    }
                ]
            }
        )
    else:
        out += _chunk({"content": "All done."})
    out += _chunk(
        {}, "tool_calls" if call else "stop", {"prompt_tokens": 100 * (n + 1), "completion_tokens": 9}
    )
    return out + b"data: [DONE]\n\n"


def _decode(raw: bytes, s: ModelEntry = ROUTER) -> Response:
    dec = dialect_for(s).decoder(s.origin)
    for ev in events(raw, ndjson=False, chunk=13):
        dec.feed(ev)
    return dec.finish()


def _as_message(r: Response) -> AssistantMessage:
    return AssistantMessage(text=r.text, thinking=r.thinking, calls=r.calls, blocks=r.blocks)


def _conversation() -> tuple[list[Message], list[Response]]:
    msgs: list[Message] = [user("Fix it.")]
    replies = []
    for n in range(3):  # three tool rounds
        r = _decode(_reply(n, call=True))
        replies.append(r)
        msgs.append(_as_message(r))
        msgs.append(ToolMessage(call_id=f"call_{n}", name="fs_read", text=f"contents {n}"))
    r = _decode(_reply(3, call=False))
    replies.append(r)
    msgs += [_as_message(r), user("And the second turn?")]
    r = _decode(_reply(4, call=False))  # the second turn's reply
    replies.append(r)
    msgs.append(_as_message(r))
    return msgs, replies


def _wire(msgs: list[Message], s: ModelEntry = ROUTER) -> tuple[dict[str, Any], bytes]:
    w = dialect_for(s).encode(
        Request(system="S", tools=(FS_READ,), messages=tuple(msgs), max_output=100), session_key=KEY
    )
    assert w.body is not None
    return w.body, w.body_bytes()


def test_merged_fragments_make_one_array_per_reply() -> None:
    r = _decode(_reply(7, call=True))
    assert len(r.blocks) == 1
    assert r.blocks[0].type == "reasoning_details"
    assert r.blocks[0].origin == ROUTER.origin
    assert orjson.loads(r.blocks[0].data) == [
        {
            "type": "reasoning.text",
            "text": "step 7 <a&b>",
            "format": "anthropic-claude-v1",
            "index": 0,
            "signature": "sig7",
        },
        {"type": "reasoning.encrypted", "data": "ZW5j7_-==", "index": 1},
    ]
    assert r.thinking == "step 7 <a&b>"


def test_three_tool_rounds_and_a_second_turn_carry_each_array_byte_for_byte_on_its_own_message() -> None:
    msgs, replies = _conversation()
    body, raw = _wire(msgs)
    wire_msgs = body["messages"]
    assert isinstance(wire_msgs, list)
    assistants = [m for m in wire_msgs if m["role"] == "assistant"]
    assert len(assistants) == len(replies) == 5
    pos = 0
    for m, r in zip(assistants, replies, strict=True):
        data = r.blocks[0].data.encode()
        assert orjson.dumps(m["reasoning_details"]) == data
        # the array's bytes appear in the body in message order, each once
        found = raw.index(b'"reasoning_details":' + data, pos)
        assert found > pos
        pos = found
        assert raw.count(data) == 1
        assert "reasoning" not in m and "reasoning_content" not in m  # no text beside the details
    # < > & go out raw (not \u escaped), as the stream sent them
    assert b"step 0 <a&b>" in raw


def test_a_request_without_details_is_unchanged_to_the_byte() -> None:
    from nodwyn.values.content import ToolCall

    call = ToolCall(id="c1", name="fs_read", arguments='{"path":"x"}')
    msgs: list[Message] = [
        user("q"),
        AssistantMessage(text="a", thinking="because", calls=(call,)),
        ToolMessage(call_id="c1", name="fs_read", text="r"),
    ]
    w = dialect_for(ROUTER).encode(
        Request(system="S", tools=(), messages=tuple(msgs), max_output=100), session_key=None
    )
    expected = (
        b'{"model":"meta/muse-spark-1.3","messages":[{"role":"system","content":"S"},'
        b'{"role":"user","content":"q"},'
        b'{"role":"assistant","content":"a","reasoning":"because","tool_calls":[{"id":"c1","type":"function",'
        b'"function":{"name":"fs_read","arguments":"{\\"path\\":\\"x\\"}"}}]},'
        b'{"role":"tool","tool_call_id":"c1","content":"r"}],"stream":true,"max_completion_tokens":100}'
    )
    assert w.body_bytes() == expected
    # a block on one reply of a longer conversation changes that message only
    full, _ = _conversation()
    plain = [
        AssistantMessage(text=m.text, thinking=m.thinking, calls=m.calls)
        if isinstance(m, AssistantMessage)
        else m
        for m in full
    ]
    body, _ = _wire(plain)
    one = list(plain)
    one[1] = full[1]
    body_one, _ = _wire(one)
    pairs = zip(body_one["messages"], body["messages"], strict=True)
    assert [i for i, (a, b) in enumerate(pairs) if a != b] == [2]  # system is wire message 0


def test_a_model_switch_and_back() -> None:
    msgs, _ = _conversation()
    # another model on the same server: its request must not carry these blocks
    with pytest.raises(OriginError, match="would go to z-ai/glm-5.3-flash at openrouter"):
        _wire(msgs, OTHER)
    # what the window sends it instead: the replies without their blocks, thinking as text
    stripped = [
        AssistantMessage(text=m.text, thinking=m.thinking, calls=m.calls)
        if isinstance(m, AssistantMessage)
        else m
        for m in msgs
    ]
    other_body, _ = _wire(stripped, OTHER)
    for m in other_body["messages"]:
        assert "reasoning_details" not in m
        if m["role"] == "assistant":
            assert m["reasoning"].startswith("step ")
    # back on the first model, the details are where they were, on each reply's own message
    body_back, _ = _wire(msgs)
    sent = [m for m in body_back["messages"] if m["role"] == "assistant"]
    kept = [m for m in msgs if isinstance(m, AssistantMessage)]
    assert [orjson.dumps(m["reasoning_details"]) for m in sent] == [m.blocks[0].data.encode() for m in kept]


def test_empty_array_is_kept_and_sent_back() -> None:
    raw = (
        _chunk({"role": "assistant", "content": "ok", "reasoning_details": []}, "stop") + b"data: [DONE]\n\n"
    )
    r = _decode(raw)
    assert [b.data for b in r.blocks] == ["[]"]
    body, wire = _wire([user("q"), _as_message(r)])
    assert body["messages"][2] == {"role": "assistant", "content": "ok", "reasoning_details": []}
    assert b'"reasoning_details":[]' in wire


def test_null_or_absent_details_keep_nothing() -> None:
    raw = (
        _chunk({"role": "assistant", "content": "ok", "reasoning_details": None}, "stop")
        + b"data: [DONE]\n\n"
    )
    assert _decode(raw).blocks == ()


def test_cerebras_keeps_no_details() -> None:
    s = entry(api="openai-chat", family="cerebras", model="m")
    assert _decode(_reply(1, call=False), s).blocks == ()


def test_non_streamed_details_keep_the_array_as_it_came() -> None:
    arr = b'[{"type":"reasoning.summary","summary":"Plan <x>","format":"unknown","index":0}]'
    body = (
        b'{"id":"g","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant",'
        b'"content":"hi","reasoning":"Plan <x>","reasoning_details":' + arr + b"}}],"
        b'"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}}}'
    )
    r = dialect_for(ROUTER).decode_body(body, ROUTER.origin)
    assert r.blocks[0].data.encode() == arr
    _, wire = _wire([user("q"), _as_message(r)])
    assert b'"reasoning_details":' + arr in wire
    # a spaced-out array is the same JSON value, sent compact
    spaced = body.replace(b'"format":"unknown"', b'"format" : "unknown"')
    r2 = dialect_for(ROUTER).decode_body(spaced, ROUTER.origin)
    assert orjson.loads(r2.blocks[0].data) == orjson.loads(arr)


def test_details_only_route_sends_no_text_without_details() -> None:
    claude = entry(
        api="openai-chat",
        family="openrouter",
        model="anthropic/claude-sonnet-5.5",
        reasoning_details_only=True,
    )
    msgs: list[Message] = [user("q"), AssistantMessage(text="a", thinking="unsigned thoughts")]
    w = dialect_for(claude).encode(
        Request(system="", tools=(), messages=tuple(msgs), max_output=9), session_key=None
    )
    assert w.body is not None
    assert w.body["messages"][1] == {"role": "assistant", "content": "a"}
    block = ThinkingBlock(
        type="reasoning_details", origin=claude.origin, data='[{"type":"reasoning.text","text":"x"}]'
    )
    msgs[1] = AssistantMessage(text="a", thinking="unsigned thoughts", blocks=(block,))
    w = dialect_for(claude).encode(
        Request(system="", tools=(), messages=tuple(msgs), max_output=9), session_key=None
    )
    assert w.body is not None
    assert w.body["messages"][1] == {
        "role": "assistant",
        "content": "a",
        "reasoning_details": [{"type": "reasoning.text", "text": "x"}],
    }


def test_merge_rules() -> None:
    acc: list[dict[str, object]] = []
    merge_details(acc, [{"type": "reasoning.text", "text": "a"}])
    merge_details(acc, [{"type": "reasoning.text", "text": "b", "signature": None}])
    merge_details(acc, [{"type": "reasoning.text", "signature": "s"}])
    merge_details(acc, [{"type": "reasoning.encrypted", "data": "[REDACTED]", "index": 1}])
    merge_details(acc, [{"type": "reasoning.encrypted", "data": "real", "index": 1}])
    merge_details(acc, [{"type": "reasoning.summary", "summary": "x", "index": 2}])
    merge_details(acc, [{"type": "reasoning.summary", "summary": "y", "index": 2}])
    assert acc == [
        {"type": "reasoning.text", "text": "ab", "signature": "s"},
        {"type": "reasoning.encrypted", "data": "real", "index": 1},
        {"type": "reasoning.summary", "summary": "xy", "index": 2},
    ]
