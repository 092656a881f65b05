"""The official SDKs drive every fake, and every fake reply and stream event validates strictly
against the SDK's own pydantic response types (``model_validate``: extra fields allowed, no
required field missing, no field of the wrong type).

Each scenario scripts the same reply twice: the SDK client sends the first request and reads the
reply its own way (``chat.completions.stream``, ``responses.stream``, ``messages.stream``,
``ollama.Client.chat``); the second is the SDK's own request sent again, whose raw reply is
validated event by event.
"""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import ollama
import openai
import orjson
import pytest
from anthropic.types import Message, RawMessageStreamEvent
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionFunctionToolParam
from openai.types.responses import Response as OpenAIResponse
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from nodwyn.fakes import FakeServer

WEATHER: ChatCompletionFunctionToolParam = {  # the tool as OpenAI's SDK types it
    "type": "function",
    "function": {
        "name": "weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
CALL = {"name": "weather", "arguments": {"city": "Lyon"}, "id": "call_w1"}
FAMILIES = ["compatible", "cerebras", "vllm", "deepseek", "llamacpp", "openrouter", "fireworks", "baseten"]
STREAM_EVENT = TypeAdapter(ResponseStreamEvent)
ANTHROPIC_EVENT = TypeAdapter(RawMessageStreamEvent)


def _sse(raw: bytes) -> list[tuple[str | None, str]]:
    out = []
    for block in raw.decode().split("\n\n"):
        event, data = None, []
        for line in block.splitlines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data:
            out.append((event, "\n".join(data)))
    return out


def _again(fake: FakeServer) -> httpx.Response:
    """The SDK's first request, sent again as it went over the wire."""
    first = fake.requests[-1]
    headers = {k: v for k, v in first.headers.items() if k not in {"content-length", "host"}}
    return httpx.post(fake.url + first.path, content=first.raw, headers=headers, timeout=10)


# -- OpenAI chat completions: every family, streamed (tools, include_usage) and not ---------------


@pytest.mark.parametrize("family", FAMILIES)
def test_openai_chat_sdk_streams_every_family(family: str) -> None:
    item = {"text": "Checking.", "thinking": "Need the weather.", "calls": [CALL]}
    with FakeServer(api="openai-chat", family=family, script=[item, item]) as fake:
        client = openai.OpenAI(base_url=fake.url + "/v1", api_key="k", max_retries=0)
        with client.chat.completions.stream(
            model="fake-model",
            messages=[{"role": "user", "content": "Weather in Lyon?"}],
            tools=[WEATHER],
            stream_options={"include_usage": True},
        ) as stream:
            chunks = [e.chunk for e in stream if e.type == "chunk"]
            final = stream.get_final_completion()
        raw = _again(fake)
    msg = final.choices[0].message
    assert msg.content == "Checking." and final.choices[0].finish_reason == "tool_calls"
    (call,) = msg.tool_calls or []
    assert call.id == "call_w1" and call.function.name == "weather"
    assert orjson.loads(call.function.arguments) == {"city": "Lyon"}
    assert (msg.model_extra or {}).get(
        {"cerebras": "reasoning", "vllm": "reasoning", "openrouter": "reasoning"}.get(
            family, "reasoning_content"
        )
    ) == "Need the weather."
    usage = next(c.usage for c in reversed(chunks) if c.usage is not None)
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert raw.status_code == 200 and raw.headers["content-type"].startswith("text/event-stream")
    events = _sse(raw.content)
    assert events[-1][1] == "[DONE]"
    for _, data in events[:-1]:
        ChatCompletionChunk.model_validate(orjson.loads(data))


@pytest.mark.parametrize("family", FAMILIES)
def test_openai_chat_sdk_reads_a_whole_reply_of_every_family(family: str) -> None:
    item = {"text": "Checking.", "calls": [CALL]}
    with FakeServer(api="openai-chat", family=family, script=[item, item]) as fake:
        client = openai.OpenAI(base_url=fake.url + "/v1", api_key="k", max_retries=0)
        completion = client.chat.completions.create(
            model="fake-model",
            messages=[{"role": "user", "content": "Weather in Lyon?"}],
            tools=[WEATHER],
        )
        raw = _again(fake)
    assert completion.choices[0].message.tool_calls is not None
    assert completion.usage is not None and completion.usage.prompt_tokens > 0
    ChatCompletion.model_validate(raw.json())


@pytest.mark.parametrize("family", FAMILIES)
def test_openai_chat_sdk_raises_a_mid_stream_error_of_every_family(family: str) -> None:
    item = {"text": "Partly", "error": {"status": 500, "message": "upstream failed", "mid_stream": True}}
    with FakeServer(api="openai-chat", family=family, script=[item]) as fake:
        client = openai.OpenAI(base_url=fake.url + "/v1", api_key="k", max_retries=0)
        with pytest.raises(openai.APIError, match="upstream failed"):
            stream = client.chat.completions.create(
                model="fake-model", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            for _ in stream:
                pass


def test_openai_chat_sdk_refuses_what_the_fake_refuses_in_the_api_shape() -> None:
    with FakeServer(api="openai-chat", script=[], api_key="right") as fake:
        client = openai.OpenAI(base_url=fake.url + "/v1", api_key="wrong", max_retries=0)
        with pytest.raises(openai.AuthenticationError) as info:
            client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "hi"}])
    assert info.value.status_code == 401 and info.value.code == "invalid_api_key"


# -- OpenAI Responses: streamed and not, reasoning, text and calls -----------------------------


@pytest.mark.parametrize("stream", [True, False])
def test_openai_responses_sdk_reads_the_fake(stream: bool) -> None:
    item = {
        "text": "Checking.",
        "phase": "commentary",
        "blocks": [{"type": "reasoning", "thinking": "Need the weather.", "position": 0}],
        "calls": [CALL],
    }
    tool = {"type": "function", **WEATHER["function"], "strict": False}
    with FakeServer(api="responses", script=[item, item]) as fake:
        client = openai.OpenAI(base_url=fake.url + "/v1", api_key="k", max_retries=0)
        ask: dict[str, Any] = {
            "model": "fake-model",
            "input": "Weather in Lyon?",
            "tools": [tool],
            "include": ["reasoning.encrypted_content"],
            "store": False,
        }
        if stream:
            with client.responses.stream(**ask) as s:
                kinds = [e.type for e in s]
                final = s.get_final_response()
            assert kinds[-1] == "response.completed"
        else:
            final = client.responses.create(**ask)
        raw = _again(fake)
    assert final.output_text == "Checking."
    reasoning, message, call = final.output
    assert reasoning.type == "reasoning" and reasoning.encrypted_content
    assert message.type == "message" and message.phase == "commentary"
    assert call.type == "function_call" and call.call_id == "call_w1"
    assert final.usage is not None and final.usage.input_tokens_details.cache_write_tokens == 0
    if not stream:
        OpenAIResponse.model_validate(raw.json())
        return
    events = _sse(raw.content)
    for event, data in events:
        value = orjson.loads(data)
        assert value["type"] == event
        STREAM_EVENT.validate_python(value)
        if "response" in value:
            OpenAIResponse.model_validate(value["response"])


# -- Anthropic: messages.create and messages.stream with tools, thinking and cache_control -------


@pytest.mark.parametrize("stream", [True, False])
def test_anthropic_sdk_reads_the_fake(stream: bool) -> None:
    item = {"text": "Checking.", "thinking": "Need the weather.", "calls": [CALL]}
    with FakeServer(api="anthropic", script=[item, item]) as fake:
        client = anthropic.Anthropic(base_url=fake.url, api_key="k", max_retries=0)
        ask: dict[str, Any] = {
            "model": "fake-model",
            "max_tokens": 1024,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": "Weather in Lyon?"}],
            "tools": [
                {
                    "name": "weather",
                    "description": "The weather.",
                    "input_schema": WEATHER["function"]["parameters"],
                }
            ],
            "thinking": {"type": "enabled", "budget_tokens": 1024},
        }
        if stream:
            with client.messages.stream(**ask) as s:
                message = s.get_final_message()
        else:
            message = client.messages.create(**ask)
        raw = _again(fake)
    thinking, text, tool = message.content
    assert thinking.type == "thinking" and thinking.thinking == "Need the weather." and thinking.signature
    assert text.type == "text" and text.text == "Checking."
    assert tool.type == "tool_use" and tool.id == "call_w1" and tool.input == {"city": "Lyon"}
    assert message.stop_reason == "tool_use" and message.usage.cache_creation_input_tokens is not None
    if not stream:
        Message.model_validate(raw.json())
        return
    for event, data in _sse(raw.content):
        value = orjson.loads(data)
        assert value["type"] == event
        if event == "ping":
            continue  # not a message event in the SDK's union; its client skips it
        ANTHROPIC_EVENT.validate_python(value)


def test_anthropic_sdk_reads_a_dropped_block_with_its_reason() -> None:
    item = {"text": "ok"}
    with FakeServer(api="anthropic", script=[item]) as fake:
        client = anthropic.Anthropic(
            base_url=fake.url,
            api_key="k",
            max_retries=0,
            default_headers={"anthropic-beta": "thinking-binding-controls-2026-08-01"},
        )
        with client.messages.stream(
            model="fake-model",
            max_tokens=64,
            messages=[
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "x", "signature": "not-ours"},
                        {"type": "text", "text": "hello"},
                    ],
                },
                {"role": "user", "content": "again"},
            ],
            extra_body={
                "thinking": {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
            },
        ) as s:
            events = [e for e in s if e.type == "message_start"]
    (start,) = events
    (t,) = (start.message.model_extra or {})["input_transformations"]
    assert t == {"type": "thinking_dropped", "path": "messages.1.content.0", "reason": "prefix_mismatch"}


# -- Ollama: the official client, streamed and not ---------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
def test_ollama_sdk_reads_the_fake(stream: bool) -> None:
    item = {"text": "Checking.", "thinking": "Need the weather.", "calls": [CALL]}
    with FakeServer(api="ollama", script=[item, item]) as fake:
        client = ollama.Client(host=fake.url)
        ask: dict[str, Any] = {
            "model": "fake-model",
            "messages": [{"role": "user", "content": "Weather in Lyon?"}],
            "tools": [WEATHER],
            "think": True,
        }
        if stream:
            parts = list(client.chat(**ask, stream=True))
            text = "".join(p.message.content or "" for p in parts)
            thinking = "".join(p.message.thinking or "" for p in parts)
            calls = [c for p in parts for c in p.message.tool_calls or []]
            last = parts[-1]
        else:
            last = client.chat(**ask, stream=False)
            text, thinking, calls = (
                last.message.content or "",
                last.message.thinking or "",
                list(last.message.tool_calls or []),
            )
        raw = _again(fake)
    assert text == "Checking." and thinking == "Need the weather."
    (call,) = calls
    assert call.function.name == "weather" and call.function.arguments == {"city": "Lyon"}
    assert last.done and last.prompt_eval_count
    for line in raw.content.splitlines():
        ollama.ChatResponse.model_validate(orjson.loads(line))


def test_every_fake_model_list_reads_with_the_official_clients() -> None:
    with (
        FakeServer(api="openai-chat", models=("m1", "m2")) as chat,
        FakeServer(api="responses", models=("m1",)) as resp,
        FakeServer(api="anthropic", models=("m1",)) as claude,
        FakeServer(api="ollama", models=("m1",)) as local,
    ):
        for fake, ids in ((chat, ["m1", "m2"]), (resp, ["m1"])):
            client = openai.OpenAI(base_url=fake.url + "/v1", api_key="k", max_retries=0)
            assert [m.id for m in client.models.list()] == ids
        ac = anthropic.Anthropic(base_url=claude.url, api_key="k", max_retries=0)
        assert [m.id for m in ac.models.list()] == ["m1"]
        assert [m.model for m in ollama.Client(host=local.url).list().models] == ["m1"]


def test_the_openai_sdk_ends_a_responses_stream_at_a_done_marker() -> None:
    item = {"text": "Four.", "quirks": ["done_marker"]}
    with FakeServer(api="responses", script=[item]) as fake:
        client = openai.OpenAI(base_url=fake.url + "/v1", api_key="k", max_retries=0)
        with client.responses.stream(model="fake-model", input="2+2?") as s:
            final = s.get_final_response()
    assert final.output_text == "Four."
