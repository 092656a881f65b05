"""The fakes refuse what each provider refuses, in that provider's error shape, and say when the
script runs out: tests rely on them as the provider's stand-in."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from nodwyn.dialects import dialect_for, parser_for
from nodwyn.errors import ConfigError
from nodwyn.fakes import FakeApi, FakeServer
from nodwyn.fakes.script import load_script
from nodwyn.values.model import Family, ModelEntry

from .fake_wire import post, sse_events, sse_json

CALL = {"id": "call_1", "type": "function", "function": {"name": "fs-read", "arguments": "{}"}}

CHAT_PATH = {
    "ollama": "/api/chat",
    "openai-chat": "/v1/chat/completions",
    "responses": "/v1/responses",
    "anthropic": "/v1/messages",
}


def _chat(fake: FakeServer, messages: list[dict[str, Any]], **extra: Any) -> httpx.Response:
    return post(
        fake.url + "/v1/chat/completions", {"model": "m", "messages": messages, "stream": True, **extra}
    )


def test_orphan_tool_result_is_400_in_the_openai_shape_and_uses_no_reply() -> None:
    with FakeServer(api="openai-chat", script=[{"text": "x"}]) as fake:
        r = _chat(
            fake,
            [{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "call_9", "content": "r"}],
        )
        assert len(fake.remaining) == 1
    assert r.status_code == 400
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert "must be a response to a preceeding message with 'tool_calls'" in err["message"]
    assert err["param"] == "messages.[1].role"


def test_a_call_without_its_result_is_400() -> None:
    with FakeServer(api="openai-chat", script=[{"text": "x"}]) as fake:
        r = _chat(
            fake,
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": "", "tool_calls": [CALL]},
                {"role": "user", "content": "b"},
            ],
        )
    assert r.status_code == 400 and "call_1" in r.json()["error"]["message"]


def test_cerebras_rejects_reasoning_content_unwrapped() -> None:
    history = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b", "reasoning_content": "hmm"},
        {"role": "user", "content": "c"},
    ]
    with FakeServer(api="openai-chat", family="cerebras", script=[{"text": "x"}, {"text": "y"}]) as fake:
        bad = _chat(fake, history)
        history[1] = {"role": "assistant", "content": "b", "reasoning": "hmm"}
        good = _chat(fake, history)
    assert bad.status_code == 400
    assert bad.json() == {
        "message": "messages.1.assistant.reasoning_content: property "
        "'messages.1.assistant.reasoning_content' is unsupported",
        "type": "invalid_request_error",
        "param": "validation_error",
        "code": "wrong_api_format",
    }
    assert good.status_code == 200
    assert any(c["choices"] and "reasoning" not in c["choices"][0]["delta"] for c in sse_json(good.text))


def test_deepseek_requires_reasoning_content_on_tool_call_turns_in_thinking_mode() -> None:
    turn: list[dict[str, Any]] = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "r"},
    ]
    with FakeServer(
        api="openai-chat", family="deepseek", script=[{"text": "x", "thinking": "t"}] * 3
    ) as fake:
        missing = _chat(fake, turn)
        off = _chat(fake, turn, thinking={"type": "disabled"})
        turn[1] = {**turn[1], "reasoning_content": "because"}
        given = _chat(fake, turn, stream_options={"include_usage": True})
    assert missing.status_code == 400
    assert (
        missing.json()["error"]["message"]
        == "The reasoning_content in the thinking mode must be passed back to the API."
    )
    assert off.status_code == 200 and given.status_code == 200
    chunks = sse_json(given.text)
    assert (
        "".join(c["choices"][0]["delta"].get("reasoning_content", "") for c in chunks if c["choices"]) == "t"
    )
    usage = [c["usage"] for c in chunks if c.get("usage")][0]
    assert set(usage) >= {"prompt_cache_hit_tokens", "prompt_cache_miss_tokens"}
    assert "prompt_tokens_details" not in usage


def test_openrouter_details_stream_as_fragments_and_only_its_own_come_back() -> None:
    details: list[dict[str, Any]] = [
        {
            "type": "reasoning.text",
            "text": "I should read the file first",
            "signature": None,
            "format": "anthropic-claude-v1",
        },
        {"type": "reasoning.encrypted", "format": "anthropic-claude-v1"},
    ]
    with FakeServer(
        api="openai-chat", family="openrouter", script=[{"text": "ok", "reasoning_details": details}] * 3
    ) as fake:
        r = _chat(fake, [{"role": "user", "content": "a"}])
        frags = [
            f
            for c in sse_json(r.text)
            if c["choices"]
            for f in c["choices"][0]["delta"].get("reasoning_details", [])
        ]
        # merge as OpenRouter's own client does: consecutive reasoning.text fragments join
        merged: list[dict[str, Any]] = []
        for f in frags:
            if merged and f["type"] == "reasoning.text" and merged[-1]["type"] == "reasoning.text":
                merged[-1]["text"] += f["text"]
                for k, v in f.items():
                    if k != "text" and merged[-1].get(k) is None:
                        merged[-1][k] = v
            else:
                merged.append(dict(f))
        assert len(frags) == 3 and len(merged) == 2
        assert merged[0]["text"] == details[0]["text"] and merged[0]["signature"]
        history: list[dict[str, Any]] = [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "ok", "reasoning_details": merged},
            {"role": "user", "content": "b"},
        ]
        back = _chat(fake, history)
        history[1]["reasoning_details"] = [{**merged[1], "data": "forged"}]
        forged = _chat(fake, history)
    assert back.status_code == 200
    assert forged.status_code == 400
    err = forged.json()["error"]
    assert err["code"] == 400 and "Invalid signature in thinking block" in err["metadata"]["raw"]


def test_responses_refuses_a_call_id_without_its_reasoning_item() -> None:
    script: list[dict[str, Any]] = [
        {"thinking": "plan", "calls": [{"name": "fs-read", "arguments": {"path": "a"}}]},
        {"text": "x"},
        {"text": "y"},
    ]
    with FakeServer(api="responses", script=script) as fake:
        r = post(
            fake.url + "/v1/responses",
            {"model": "m", "input": "go", "stream": True, "include": ["reasoning.encrypted_content"]},
        )
        events = [json.loads(d) for _, d in sse_events(r.text)]
        added = [
            e["item"]
            for e in events
            if e["type"] == "response.output_item.added" and e["item"]["type"] == "reasoning"
        ]
        done = {e["item"]["type"]: e["item"] for e in events if e["type"] == "response.output_item.done"}
        assert added[0]["encrypted_content"] != done["reasoning"]["encrypted_content"]  # take it from .done
        fc = done["function_call"]
        output = {"type": "function_call_output", "call_id": fc["call_id"], "output": "text"}
        without = post(
            fake.url + "/v1/responses", {"model": "m", "input": ["go", fc, output][1:], "stream": True}
        )
        dropped_id = {k: v for k, v in fc.items() if k not in {"id", "status"}}
        ok = post(fake.url + "/v1/responses", {"model": "m", "input": [dropped_id, output], "stream": True})
        kept = post(
            fake.url + "/v1/responses",
            {"model": "m", "input": [done["reasoning"], fc, output], "stream": True},
        )
    assert without.status_code == 400
    assert without.json()["error"]["message"] == (
        f"Item '{fc['id']}' of type 'function_call' was provided without its required 'reasoning' item: "
        f"'{done['reasoning']['id']}'."
    )
    assert ok.status_code == 200 and kept.status_code == 200


def test_anthropic_refuses_a_thinking_block_it_did_not_sign_unless_drop_block() -> None:
    script = [{"thinking": "let me see", "text": "hi"}, {"text": "a"}, {"text": "b"}]
    headers = {"anthropic-version": "2023-06-01"}
    with FakeServer(api="anthropic", script=script) as fake:
        r = post(
            fake.url + "/v1/messages",
            {"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": "x"}], "stream": True},
            headers,
        )
        events = [json.loads(d) for _, d in sse_events(r.text)]
        sig = [
            e["delta"]["signature"]
            for e in events
            if e["type"] == "content_block_delta" and e["delta"]["type"] == "signature_delta"
        ][0]
        block = {"type": "thinking", "thinking": "let me see", "signature": sig}
        messages = [
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": [block, {"type": "text", "text": "hi"}]},
            {"role": "user", "content": "y"},
        ]
        good = post(
            fake.url + "/v1/messages", {"model": "m", "max_tokens": 50, "messages": messages}, headers
        )
        block["thinking"] = "let me see!"  # modified
        bad = post(fake.url + "/v1/messages", {"model": "m", "max_tokens": 50, "messages": messages}, headers)
        binding = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
        no_beta = post(
            fake.url + "/v1/messages",
            {"model": "m", "max_tokens": 50, "messages": messages, "thinking": binding},
            headers,
        )
        dropped = post(
            fake.url + "/v1/messages",
            {"model": "m", "max_tokens": 50, "messages": messages, "thinking": binding, "stream": True},
            {**headers, "anthropic-beta": "thinking-binding-controls-2026-08-01"},
        )
    assert good.status_code == 200
    assert (
        bad.status_code == 400
        and "messages.1.content.0: Invalid `signature` in `thinking` block" in bad.json()["error"]["message"]
    )
    assert no_beta.status_code == 400
    start = json.loads(sse_events(dropped.text)[0][1])
    assert start["message"]["input_transformations"] == [
        {"type": "thinking_dropped", "path": "messages.1.content.0", "reason": "prefix_mismatch"}
    ]


def test_ollama_refuses_string_arguments() -> None:
    with FakeServer(api="ollama", script=[{"text": "x"}]) as fake:
        call = {"function": {"name": "f", "arguments": "{}"}}
        r = post(
            fake.url + "/api/chat",
            {"model": "fake-model", "messages": [{"role": "assistant", "content": "", "tool_calls": [call]}]},
        )
    assert r.status_code == 400 and "cannot unmarshal string" in r.json()["error"]


@pytest.mark.parametrize("api", ["ollama", "openai-chat", "responses", "anthropic"])
def test_script_exhaustion_and_scripted_errors_in_each_shape(api: FakeApi) -> None:
    script = [{"error": {"status": 429, "message": "slow down", "retry_after": 3}}]
    path = CHAT_PATH[api]
    body: dict[str, Any] = {
        "model": "fake-model",
        "max_tokens": 5,
        "messages": [{"role": "user", "content": "x"}],
        "input": "x",
    }
    if api == "responses":
        del body["messages"]
    with FakeServer(api=api, script=script) as fake:
        limited = post(fake.url + path, body, {"anthropic-version": "2023-06-01"})
        gone = post(fake.url + path, body, {"anthropic-version": "2023-06-01"})
    assert limited.status_code == 429 and limited.headers["retry-after"] == "3"
    assert "slow down" in limited.text
    assert gone.status_code == 410 and "script exhausted" in gone.text
    if api == "anthropic":
        assert limited.json()["error"]["type"] == "rate_limit_error"
    if api == "ollama":
        assert set(gone.json()) == {"error"}


def test_a_bad_script_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "replies.jsonl"
    path.write_text('{"text": "a"}\n{"text": "b", "colour": 1}\n')
    with pytest.raises(ConfigError, match=r"replies.jsonl:2: unknown keys \['colour'\]"):
        load_script(path)


def test_cli_fake_serve_prints_its_url_and_serves_the_script(tmp_path: Path) -> None:
    script = tmp_path / "replies.jsonl"
    script.write_text(json.dumps({"text": "hello from the script"}) + "\n")
    with subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from nodwyn.cli import main; main()",
            "fake",
            "serve",
            "--api",
            "ollama",
            "--script",
            str(script),
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:")
            models = httpx.get(url + "/api/tags", timeout=5).json()
            r = post(
                url + "/api/chat",
                {"model": models["models"][0]["name"], "messages": [{"role": "user", "content": "hi"}]},
            )
            text = "".join(json.loads(line)["message"]["content"] for line in r.text.splitlines())
            assert text == "hello from the script"
            again = post(
                url + "/api/chat", {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}
            )
            assert again.status_code == 410
        finally:
            proc.terminate()
            try:
                assert proc.wait(timeout=30) == 0, proc.stderr.read() if proc.stderr else ""
            except subprocess.TimeoutExpired:
                proc.kill()  # never leave the with's own wait to hang the suite
                proc.wait()
                raise


def test_responses_reasoning_by_id_needs_a_stored_response_or_its_encrypted_content() -> None:
    script = [
        {"thinking": "plan", "text": "a"},
        {"thinking": "plan", "text": "b"},
        {"text": "c"},
        {"text": "d"},
    ]
    with FakeServer(api="responses", script=script) as fake:

        def reasoning_of(store: bool) -> dict[str, Any]:
            r = post(
                fake.url + "/v1/responses", {"model": "m", "input": "go", "stream": True, "store": store}
            )
            done = [json.loads(d)["item"] for e, d in sse_events(r.text) if e == "response.output_item.done"]
            return next(i for i in done if i["type"] == "reasoning")

        kept, unkept = reasoning_of(True), reasoning_of(False)
        assert "encrypted_content" not in kept and "encrypted_content" not in unkept
        tail = [{"role": "assistant", "content": "a"}, {"role": "user", "content": "next"}]
        by_id = post(fake.url + "/v1/responses", {"model": "m", "input": [kept, *tail], "stream": True})
        lost = post(fake.url + "/v1/responses", {"model": "m", "input": [unkept, *tail], "stream": True})
    assert by_id.status_code == 200
    assert lost.status_code == 404
    assert lost.json()["error"]["message"].startswith(f"Item with id '{unkept['id']}' not found.")


@pytest.mark.parametrize(
    ("api", "family"),
    [
        ("openai-chat", "compatible"),
        ("openai-chat", "openrouter"),
        ("responses", "compatible"),
        ("anthropic", "compatible"),
        ("ollama", "compatible"),
    ],
)
def test_a_reply_not_streamed_is_the_same_reply(api: FakeApi, family: Family) -> None:
    """Asked with stream false, each fake answers one JSON object that reads as the streamed reply."""
    details = [{"type": "reasoning.text", "text": "first I read", "signature": None, "format": "x"}]
    item = {
        "thinking": "I will read it",
        "text": "Reading.",
        "calls": [{"name": "fs-read", "arguments": {"p": 1}}],
        "reasoning_details": details if family == "openrouter" else None,
    }
    path = CHAT_PATH[api]
    base: dict[str, Any] = {"model": "fake-model", "max_tokens": 50}
    if api == "responses":
        base["input"] = "x"
    else:
        base["messages"] = [{"role": "user", "content": "x"}]
    headers = {"anthropic-version": "2023-06-01"}
    replies = []
    for stream in (True, False):
        with FakeServer(api=api, family=None if family == "compatible" else family, script=[item]) as fake:
            settings = ModelEntry(
                name="f",
                api=api,
                model="fake-model",
                context_size=1000,
                family=family,
                base_url=fake.url,
            )
            dialect = dialect_for(settings)
            extra = {"stream_options": {"include_usage": True}} if stream and api == "openai-chat" else {}
            r = post(fake.url + path, {**base, "stream": stream, **extra}, headers)
            assert r.status_code == 200, r.text
            if stream:
                decoder = dialect.decoder(settings.origin)
                parser = parser_for(settings)
                for ev in parser.feed(r.content) + parser.close():
                    decoder.feed(ev)
                replies.append(decoder.finish())
            else:
                assert r.headers["content-type"] == "application/json"
                replies.append(dialect.decode_body(r.content, settings.origin))
    streamed, whole = replies
    assert (whole.text, whole.thinking, whole.finish) == (streamed.text, streamed.thinking, streamed.finish)
    assert [(c.name, c.arguments) for c in whole.calls] == [(c.name, c.arguments) for c in streamed.calls]
    assert whole.usage.prompt_tokens == streamed.usage.prompt_tokens
    assert [b.type for b in whole.blocks] == [b.type for b in streamed.blocks]
