"""Each fake's cache model, seen through raw requests shaped as each API documents them."""

from __future__ import annotations

import json
from typing import Any

from nodwyn.fakes import FakeServer
from nodwyn.fakes.cache import BLOCK, MIN_CACHED

from .fake_wire import SYSTEM, ndjson, post, sse_events, sse_json


def _chat_turns(fake: FakeServer, turns: int, headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """An append-only chat: each request is the previous one plus the reply and a new user message."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    usages = []
    for n in range(turns):
        messages.append({"role": "user", "content": f"step {n}: " + "look at the next file please " * 20})
        r = post(
            fake.url + "/v1/chat/completions",
            {"model": "m", "messages": messages, "stream": True, "stream_options": {"include_usage": True}},
            headers,
        )
        assert r.status_code == 200, r.text
        chunks = sse_json(r.text)
        assert r.text.rstrip().endswith("data: [DONE]")
        usage_chunks = [c for c in chunks if c.get("usage")]
        assert len(usage_chunks) == 1 and usage_chunks[0]["choices"] == []  # the include_usage chunk
        assert all(c["usage"] is None for c in chunks if c is not usage_chunks[0])
        usages.append(usage_chunks[0]["usage"])
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
        messages.append({"role": "assistant", "content": text})
    return usages


def test_openai_blocks_cache_hits_whole_128_token_blocks_from_1024() -> None:
    script = [{"text": f"reply {n} " * 30} for n in range(5)]
    with FakeServer(api="openai-chat", cache="blocks", script=script) as fake:
        usages = _chat_turns(fake, 5)
    assert usages[0]["prompt_tokens_details"]["cached_tokens"] == 0
    for prev, cur in zip(usages, usages[1:], strict=False):
        cached = cur["prompt_tokens_details"]["cached_tokens"]
        assert cached % BLOCK == 0 and cached >= MIN_CACHED
        # the previous prompt is a prefix of this one: all but its last partial block is read
        assert prev["prompt_tokens"] - BLOCK < cached <= prev["prompt_tokens"]
        assert cur["prompt_tokens"] > cached


def test_openai_small_prompts_are_never_cached() -> None:
    with FakeServer(api="openai-chat", cache="blocks", script=[{"text": "a"}, {"text": "b"}]) as fake:
        for _ in range(2):
            r = post(
                fake.url + "/v1/chat/completions",
                {
                    "model": "m",
                    "messages": [{"role": "user", "content": "hi"}],
                    "stream": True,
                    "stream_options": {"include_usage": True},
                },
            )
            usage = [c for c in sse_json(r.text) if c.get("usage")][0]["usage"]
            assert usage["prompt_tokens_details"]["cached_tokens"] == 0


def test_usage_only_with_include_usage_except_openrouter() -> None:
    with FakeServer(api="openai-chat", script=[{"text": "a"}]) as fake:
        r = post(
            fake.url + "/v1/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True},
        )
        assert all("usage" not in c for c in sse_json(r.text))
    with FakeServer(api="openai-chat", family="openrouter", script=[{"text": "a"}]) as fake:
        r = post(
            fake.url + "/v1/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True},
        )
        assert r.text.startswith(": OPENROUTER PROCESSING")
        assert [c["usage"] for c in sse_json(r.text) if c.get("usage")][0]["prompt_tokens"] > 0


def _replica_share(with_key: bool) -> float:
    turns = 30
    script = [{"text": f"reply {n} " * 20} for n in range(turns)]
    headers = {"x-session-id": "a" * 64} if with_key else None
    with FakeServer(api="openai-chat", family="openrouter", cache="replicas", seed=3, script=script) as fake:
        usages = _chat_turns(fake, turns, headers)
    prompt: int = sum(u["prompt_tokens"] for u in usages)
    cached: int = sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages)
    return cached / prompt


def test_replicas_share_is_low_without_a_session_key_and_high_with_one() -> None:
    without, with_key = _replica_share(False), _replica_share(True)
    print(f"replicas: cached share without a session key {without:.1%}, with one {with_key:.1%}")
    assert without < 0.3
    assert with_key > 0.85
    assert with_key - without > 0.35


def test_ollama_single_slot_reports_only_prefill_time_and_reloads_on_num_ctx_change() -> None:
    script = [{"text": "one", "thinking": "hmm"}, {"text": "two"}, {"text": "three"}]
    with FakeServer(api="ollama", script=script) as fake:
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hi"}]
        finals = []
        for num_ctx in (8192, 8192, 4096):
            r = post(
                fake.url + "/api/chat",
                {"model": "fake-model", "messages": messages, "options": {"num_ctx": num_ctx}},
            )
            assert r.headers["content-type"] == "application/x-ndjson"
            lines = ndjson(r.text)
            assert [ln["done"] for ln in lines].count(True) == 1 and lines[-1]["done"]
            finals.append(lines[-1])
            text = "".join(ln["message"]["content"] for ln in lines)
            messages += [{"role": "assistant", "content": text}, {"role": "user", "content": "more"}]
        lookups = fake.lookups
    for final in finals:
        assert "cached_tokens" not in final and "prompt_eval_count" in final
    assert finals[1]["prompt_eval_count"] > finals[0]["prompt_eval_count"]
    # warm: only the appended part is evaluated; the num_ctx change reloads and evaluates it all
    assert finals[1]["prompt_eval_duration"] < finals[0]["prompt_eval_duration"] / 10
    assert "load_duration" not in finals[1]
    assert finals[2]["load_duration"] > 0
    assert finals[2]["prompt_eval_duration"] >= finals[0]["prompt_eval_duration"]
    assert [lk.cached_tokens > 0 for lk in lookups] == [False, True, False]


def _anthropic(fake: FakeServer, body: dict[str, Any]) -> tuple[int, list[Any]]:
    r = post(fake.url + "/v1/messages", body, {"anthropic-version": "2023-06-01"})
    if r.status_code != 200:
        return r.status_code, [r.json()]
    return 200, [(e, json.loads(d)) for e, d in sse_events(r.text)]


def test_anthropic_caches_only_when_asked_and_input_is_the_uncached_tail() -> None:
    script = [{"text": f"reply {n}"} for n in range(4)]
    with FakeServer(api="anthropic", script=script) as fake:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "hello " * 30}]
        usages = []
        for ask in (False, False, True, True):
            body: dict[str, Any] = {
                "model": "m",
                "max_tokens": 100,
                "system": SYSTEM,
                "messages": messages,
                "stream": True,
            }
            if ask:
                body["cache_control"] = {"type": "ephemeral"}
            status, events = _anthropic(fake, body)
            assert status == 200
            start = [d for e, d in events if e == "message_start"][0]
            usages.append(start["message"]["usage"])
            assert events[-1][0] == "message_stop"
            messages = [
                *messages,
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "next " * 20},
            ]
        totals = [fake.lookups[i].prompt_tokens for i in range(4)]
    assert [u["cache_read_input_tokens"] for u in usages[:2]] == [0, 0]
    assert [u["cache_creation_input_tokens"] for u in usages[:2]] == [0, 0]
    assert usages[2]["cache_creation_input_tokens"] > 0 and usages[2]["cache_read_input_tokens"] == 0
    assert usages[3]["cache_read_input_tokens"] == usages[2]["cache_creation_input_tokens"]
    for u, total in zip(usages, totals, strict=True):
        assert u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"] == total


def test_anthropic_refuses_a_fifth_breakpoint_in_its_error_shape() -> None:
    cc = {"type": "ephemeral"}
    content = [{"type": "text", "text": f"part {i}", "cache_control": cc} for i in range(4)]
    with FakeServer(api="anthropic", script=[{"text": "x"}]) as fake:
        status, (body,) = _anthropic(
            fake,
            {
                "model": "m",
                "max_tokens": 10,
                "cache_control": cc,
                "messages": [{"role": "user", "content": content}],
            },
        )
        assert fake.remaining  # a refused request uses no reply
    assert status == 400
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert body["error"]["message"] == "A maximum of 4 blocks with cache_control may be provided. Found 5."


def test_responses_usage_only_in_the_terminal_event_and_cached_in_blocks() -> None:
    script = [{"text": "first " * 10, "thinking": "think"}, {"text": "second"}]
    with FakeServer(api="responses", script=script) as fake:
        inputs: list[dict[str, Any]] = [{"role": "user", "content": "do it " * 30}]
        usages = []
        for _ in range(2):
            r = post(
                fake.url + "/v1/responses",
                {"model": "m", "instructions": SYSTEM, "input": inputs, "stream": True},
            )
            events = sse_events(r.text)
            datas = [json.loads(d) for _, d in events]
            assert [e for e, _ in events] == [d["type"] for d in datas]
            assert [d["sequence_number"] for d in datas] == list(range(len(datas)))
            assert all(d["response"]["usage"] is None for d in datas if d["type"] == "response.created")
            assert datas[-1]["type"] == "response.completed"
            usages.append(datas[-1]["response"]["usage"])
            inputs = [*inputs, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "again"}]
    assert usages[0]["input_tokens_details"]["cached_tokens"] == 0
    assert usages[1]["input_tokens_details"]["cached_tokens"] % BLOCK == 0
    assert usages[1]["input_tokens_details"]["cached_tokens"] >= MIN_CACHED
    assert usages[0]["output_tokens_details"]["reasoning_tokens"] > 0
