"""Regressions for what real provider traffic showed (each a regression case).

Each stream here has the shape a real server sent (the recorded cassettes under tests/data/traffic
show the same shapes; test_recorded_traffic.py decodes those whole).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from nodwyn.dialects import dialect_for
from nodwyn.errors import DecodeError
from nodwyn.values.canonical import digest
from nodwyn.values.codec import message_from_json, request_to_json, response_from_json, response_to_json
from nodwyn.values.content import AssistantMessage, ToolCall, ToolMessage
from nodwyn.values.request import Request, Response

from .cases import entry, events, user


def _sse(*values: Any, event: bool = False) -> bytes:
    out = b""
    for v in values:
        if isinstance(v, bytes):
            out += b"data: " + v + b"\n\n"
            continue
        head = f"event: {v['type']}\n".encode() if event else b""
        out += head + b"data: " + orjson.dumps(v) + b"\n\n"
    return out


def _decode(settings: Any, raw: bytes, *, ndjson: bool = False, chunk: int | None = None) -> Response:
    dec = dialect_for(settings).decoder(settings.origin)
    for ev in events(raw, ndjson=ndjson, chunk=chunk):
        dec.feed(ev)
    return dec.finish()


# -- 1. Responses streams that end with data: [DONE] (OpenRouter's /api/v1/responses) -----------

RESPONSES = entry(api="responses", model="openai/gpt-oss-120b", server="openrouter")


def _responses_stream(*, done_at: str | None) -> bytes:
    completed = {
        "type": "response.completed",
        "sequence_number": 3,
        "response": {
            "id": "gen-1",
            "object": "response",
            "model": "openai/gpt-oss-120b",
            "status": "completed",
            "output": [
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "Four.", "annotations": []}],
                }
            ],
            "usage": {
                "input_tokens": 12,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 3,
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        },
    }
    delta = {"type": "response.output_text.delta", "sequence_number": 2, "delta": "Four.", "item_id": "msg_1"}
    parts: list[Any] = [
        {"type": "response.created", "sequence_number": 0, "response": {"id": "gen-1"}},
        delta,
    ]
    if done_at == "before":
        parts.append(b"[DONE]")
    else:
        parts.append(completed)
        if done_at == "after":
            parts.append(b"[DONE]")
    return _sse(*parts, event=False)


@pytest.mark.parametrize("chunk", [None, 5])
def test_a_responses_stream_ending_with_done_decodes(chunk: int | None) -> None:
    r = _decode(RESPONSES, _responses_stream(done_at="after"), chunk=chunk)
    assert r.text == "Four." and r.finish == "stop" and r.usage.prompt_tokens == 12


def test_a_done_before_the_terminal_event_is_still_an_incomplete_stream() -> None:
    dec = dialect_for(RESPONSES).decoder(RESPONSES.origin)
    for ev in events(_responses_stream(done_at="before"), ndjson=False):
        dec.feed(ev)
    assert not dec.complete
    with pytest.raises(DecodeError, match="the stream ended before its terminal response.completed"):
        dec.finish()


# -- 2. OpenRouter reasoning_details: an empty first signature, the real one later --------------

CLAUDE_ROUTE = entry(
    api="openai-chat",
    family="openrouter",
    model="anthropic/claude-sonnet-4.5",
    server="openrouter",
    reasoning_details_only=True,
)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "gen-1",
        "object": "chat.completion.chunk",
        "model": "anthropic/claude-sonnet-4.5",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _detail(**kw: Any) -> dict[str, Any]:
    return {
        "reasoning_details": [{"type": "reasoning.text", "format": "anthropic-claude-v1", "index": 0, **kw}]
    }


def _claude_route_stream(signature: str | None) -> bytes:
    """As OpenRouter streamed a Claude route (recorded: test_openrouter_streaming_reasoning)."""
    parts = [
        _chunk({"role": "assistant", "content": "", "reasoning": None, "reasoning_details": []}),
        _chunk({"role": "assistant", "content": "", **_detail(text="", signature="")}),
        _chunk({"role": "assistant", "content": "", "reasoning": "2+2 is 4.", **_detail(text="2+2 is 4.")}),
    ]
    if signature is not None:
        parts.append(_chunk({"role": "assistant", "content": "", **_detail(signature=signature)}))
    parts += [_chunk({"content": "4"}, "stop")]
    return _sse(*parts, b"[DONE]")


def test_a_late_signature_replaces_the_empty_first_one() -> None:
    r = _decode(CLAUDE_ROUTE, _claude_route_stream("EqMBCkgIBxAC"))
    (block,) = r.blocks
    (entry_,) = orjson.loads(block.data)
    assert entry_["signature"] == "EqMBCkgIBxAC" and entry_["text"] == "2+2 is 4."
    assert r.notes == ()
    wire = dialect_for(CLAUDE_ROUTE).encode(
        Request(
            system="",
            tools=(),
            messages=(user("2+2?"), AssistantMessage(text=r.text, blocks=r.blocks), user("and 3+3?")),
        ),
        session_key=None,
    )
    assert wire.body is not None
    assert wire.body["messages"][1]["reasoning_details"][0]["signature"] == "EqMBCkgIBxAC"


def test_an_entry_unsigned_at_the_end_is_not_kept_for_a_route_that_checks_signatures() -> None:
    r = _decode(CLAUDE_ROUTE, _claude_route_stream(None))
    assert r.blocks == () and r.thinking == "2+2 is 4."
    (note,) = r.notes
    assert "reasoning_details[0]" in note and "without a signature" in note and "not sent back" in note
    # A route that does not check signatures keeps it (nothing there refuses it).
    other = entry(api="openai-chat", family="openrouter", model="z-ai/glm-5", server="openrouter")
    assert len(_decode(other, _claude_route_stream(None)).blocks) == 1


# -- 3. List-valued content (Mistral's chat completions) ----------------------------------------

MISTRAL = entry(api="openai-chat", model="magistral-medium-latest", base_url="https://api.mistral.ai")


def test_list_content_in_a_whole_reply_is_read() -> None:
    body = {
        "id": "x",
        "object": "chat.completion",
        "model": "magistral-medium-latest",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": [{"type": "text", "text": "Add them."}]},
                        {"type": "text", "text": "It is 4."},
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14},
    }
    r = dialect_for(MISTRAL).decode_body(orjson.dumps(body), MISTRAL.origin)
    assert r.text == "It is 4." and r.thinking == "Add them."


def test_list_content_in_a_stream_is_read() -> None:
    think = {"type": "thinking", "thinking": [{"type": "text", "text": "Add "}]}
    parts = [
        _chunk({"role": "assistant", "content": [think]}),
        _chunk({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "them."}]}]}),
        _chunk({"content": [{"type": "text", "text": "It is 4."}]}),
        _chunk({"content": ""}, "stop"),
    ]
    r = _decode(MISTRAL, _sse(*parts, b"[DONE]"), chunk=9)
    assert r.thinking == "Add them." and r.text == "It is 4."


def test_a_content_chunk_it_cannot_represent_is_an_error_naming_the_field() -> None:
    chunk = _chunk({"content": [{"type": "text", "text": "a"}, {"type": "reference", "reference_ids": [1]}]})
    with pytest.raises(DecodeError, match=r"choices\[0\]\.delta\.content\[1\]\.type is 'reference'"):
        _decode(MISTRAL, _sse(chunk, _chunk({}, "stop"), b"[DONE]"))


# -- 4. Responses phase: kept on the reply, sent back, hashed only when present ----------------


def test_phase_is_kept_and_sent_back_on_the_assistant_message() -> None:
    openai = entry(api="responses", model="gpt-5.5", base_url="https://api.openai.com", credential="OPENAI")
    item = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "phase": "commentary",
        "content": [{"type": "output_text", "text": "Looking it up.", "annotations": [], "logprobs": []}],
    }
    call = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "get", "arguments": "{}"}
    final = {
        "id": "r",
        "object": "response",
        "model": "gpt-5.5",
        "status": "completed",
        "output": [item, call],
    }
    r = _decode(openai, _sse({"type": "response.completed", "sequence_number": 0, "response": final}))
    assert r.phase == "commentary"
    assert response_from_json(response_to_json(r)) == r
    msg = AssistantMessage(text=r.text, calls=r.calls, phase=r.phase)
    req = Request(
        system="",
        tools=(),
        messages=(user("capital?"), msg, ToolMessage(call_id="call_1", name="get", text="Paris")),
    )
    wire = dialect_for(openai).encode(req, session_key=None)
    assert wire.body is not None
    assert wire.body["input"][1] == {
        "type": "message",
        "role": "assistant",
        "content": "Looking it up.",
        "phase": "commentary",
    }
    assert message_from_json(request_to_json(req)["messages"][1]) == msg


def test_a_request_without_phase_hashes_as_before() -> None:
    req = Request(system="s", tools=(), messages=(user("a"), AssistantMessage(text="b")), max_output=64)
    as_json = request_to_json(req)
    assert "phase" not in as_json["messages"][1]
    assert "phase" not in response_to_json(Response(text="b"))
    # The digest the request had before phase existed (written down from today's main).
    assert digest(as_json) == "sha256:5c54941a3a119c2c645646415228269d5963decbde56003ffaaad70afc1dc61b"
    with_phase = request_to_json(
        Request(system="s", tools=(), messages=(user("a"), AssistantMessage(text="b", phase="final_answer")))
    )
    assert digest(with_phase) != digest(request_to_json(Request(system="s", tools=(), messages=req.messages)))


# -- 5. Tool calls without ids: left for the agent to mint, unique in the session ---------------

GEMINI = entry(
    api="openai-chat",
    model="gemini-2.5-flash",
    base_url="https://generativelanguage.googleapis.com/v1beta/openai",
)


def test_a_call_without_an_id_gets_no_id_that_repeats_across_turns() -> None:
    from nodwyn.values.content import mint_call_ids  # new with this fix: imported here so the rest runs

    call = {"index": 0, "type": "function", "function": {"name": "get", "arguments": "{}"}}
    raw = _sse(_chunk({"role": "assistant", "tool_calls": [call]}), _chunk({}, "tool_calls"), b"[DONE]")
    first, second = _decode(GEMINI, raw), _decode(GEMINI, raw)
    assert first.calls[0].id == "" == second.calls[0].id  # no made-up id that would repeat
    a = mint_call_ids(first.calls, 7)
    b = mint_call_ids(second.calls, 12)
    assert a[0].id == "call_7_0" and b[0].id == "call_12_0"
    assert mint_call_ids(a, 30) == a  # an id given is kept
    mixed = (ToolCall(id="x", name="n", arguments="{}"), ToolCall(id="", name="n", arguments="{}"))
    assert [c.id for c in mint_call_ids(mixed, 4)] == ["x", "call_4_1"]


def test_an_ollama_call_without_an_id_is_left_for_the_agent() -> None:
    ollama = entry(api="ollama", model="qwen3")
    line = {
        "model": "qwen3",
        "message": {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get", "arguments": {}}}],
        },
        "done": True,
        "done_reason": "stop",
    }
    r = _decode(ollama, orjson.dumps(line) + b"\n", ndjson=True)
    assert r.calls[0].id == ""


# -- 6. Anthropic: input_transformations on message_delta; is_error as sent ---------------------

ANTHROPIC = entry(api="anthropic", model="claude-sonnet-4-5", base_url="https://api.anthropic.com")


def test_input_transformations_on_message_delta_are_recorded() -> None:
    start = {
        "type": "message_start",
        "message": {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-sonnet-4-5",
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    text = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 2},
        "input_transformations": [
            {"type": "thinking_dropped", "path": "messages.1.content.0", "reason": "prefix_mismatch"}
        ],
    }
    raw = _sse(
        start,
        block,
        text,
        {"type": "content_block_stop", "index": 0},
        delta,
        {"type": "message_stop"},
        event=True,
    )
    r = _decode(ANTHROPIC, raw)
    assert r.text == "Hi"
    assert r.notes == ("anthropic thinking_dropped at messages.1.content.0: prefix_mismatch",)


def test_a_tool_result_carries_is_error_as_it_is() -> None:
    req = Request(
        system="",
        tools=(),
        messages=(
            user("go"),
            AssistantMessage(
                calls=(
                    ToolCall(id="toolu_1", name="get", arguments="{}"),
                    ToolCall(id="toolu_2", name="get", arguments="{}"),
                )
            ),
            ToolMessage(call_id="toolu_1", name="get", text="Mexico"),
            ToolMessage(call_id="toolu_2", name="get", text="no such place", error=True),
        ),
        max_output=256,
    )
    wire = dialect_for(ANTHROPIC).encode(req, session_key=None)
    assert wire.body is not None
    results = wire.body["messages"][2]["content"]
    assert [r["is_error"] for r in results] == [False, True]


# -- chunks with wrong types are an error naming the field, not an empty reply -------------------


@pytest.mark.parametrize(
    ("settings", "raw", "field"),
    [
        (
            GEMINI,
            _sse(_chunk({"content": 42}), _chunk({}, "stop"), b"[DONE]"),
            r"choices\[0\]\.delta\.content",
        ),
        (
            GEMINI,
            _sse(_chunk({"reasoning_content": ["x"]}), _chunk({}, "stop")),
            r"choices\[0\]\.delta\.reasoning_content",
        ),
        (GEMINI, _sse({"id": "x", "choices": {"index": 0}}), r"choices is an object"),
        (
            GEMINI,
            _sse(_chunk({"tool_calls": [{"index": 0, "function": {"name": 5}}]})),
            r"tool_calls\[0\]\.function\.name",
        ),
        (
            RESPONSES,
            _sse({"type": "response.output_text.delta", "sequence_number": 1, "delta": 3}),
            r"response\.output_text\.delta\.delta",
        ),
        (
            ANTHROPIC,
            _sse(
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": {"t": 1}},
                },
            ),
            r"content_block_delta\.delta\.text is an object",
        ),
        (
            entry(api="ollama", model="q"),
            b'{"message": {"role": "assistant", "content": ["hi"]}, "done": false}\n',
            r"message\.content is an array",
        ),
    ],
    ids=[
        "chat-content",
        "chat-reasoning",
        "chat-choices",
        "chat-call-name",
        "responses-delta",
        "anthropic-text",
        "ollama-content",
    ],
)
def test_a_chunk_with_a_wrong_type_is_a_decode_error_naming_the_field(
    settings: Any, raw: bytes, field: str
) -> None:
    with pytest.raises(DecodeError, match=field):
        _decode(settings, raw, ndjson=settings.api == "ollama")


def test_a_server_tool_block_is_left_out_with_a_note_not_in_silence() -> None:
    start = {
        "type": "message_start",
        "message": {"id": "m", "type": "message", "role": "assistant", "content": [], "model": "c"},
    }
    blocks = [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {},
            },
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": "Found it."}},
        {"type": "content_block_stop", "index": 1},
    ]
    end = [
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}},
        {"type": "message_stop"},
    ]
    r = _decode(ANTHROPIC, _sse(start, *blocks, *end, event=True))
    assert r.text == "Found it." and r.calls == ()
    assert r.notes == (
        "anthropic: content[0] (server_tool_use) left out: the server ran it, "
        "and nodwyn does not send such blocks back",
    )
