"""The session key: where each family wants it, and only on the wire."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from nodwyn.dialects import dialect_for, session_key

from .cases import KEY, entry, small

PLAN = ("session-id", "thread-id", "x-client-request-id")
# The key goes as both headers whenever it is sent, except to a server with a session header of
# its own (its profile names it).
BOTH = ("X-Session-Id", "X-Session-Affinity")


def test_key_is_the_sha256_hex_of_the_session_id_and_stable() -> None:
    sid = "20261007T194139Z-eef2d1d4"
    assert session_key(sid) == hashlib.sha256(sid.encode()).hexdigest()
    assert session_key(sid) == session_key(sid)  # the same across a resume
    assert len(session_key(sid)) == 64 and sid not in session_key(sid)


@pytest.mark.parametrize(
    ("api", "family", "header"),
    [
        ("openai-chat", "compatible", BOTH),
        ("openai-chat", "cerebras", BOTH),
        ("openai-chat", "vllm", BOTH),
        ("openai-chat", "deepseek", BOTH),
        ("openai-chat", "llamacpp", BOTH),
        ("openai-chat", "openrouter", ("X-Session-Id",)),  # each server's own
        ("openai-chat", "fireworks", ("x-session-affinity",)),
        ("openai-chat", "baseten", ("x-baseten-session-id",)),
        ("responses", "compatible", BOTH),
    ],
)
@pytest.mark.parametrize("mode", ["session", "header", "off"])
@pytest.mark.parametrize("plan", [False, True])
def test_cache_key_modes(api: str, family: str, header: tuple[str, ...], mode: str, plan: bool) -> None:
    s = entry(api=api, family=family, cache_key=mode)
    w = dialect_for(s).encode(small(), session_key=KEY, plan_usage=plan)
    assert w.body is not None
    sent = {k: v for k, v in w.headers.items() if v == KEY}
    if mode == "off":
        assert sent == {} and "prompt_cache_key" not in w.body
        return
    expected = dict.fromkeys(header, KEY) | (dict.fromkeys(PLAN, KEY) if plan else {})
    assert sent == expected
    assert ("prompt_cache_key" in w.body) == (mode == "session")
    if mode == "session":
        assert w.body["prompt_cache_key"] == KEY
    # nothing else differs from the request sent without a key
    bare = dialect_for(s).encode(small(), session_key=None, plan_usage=plan)
    assert bare.body is not None
    assert {k: v for k, v in w.body.items() if k != "prompt_cache_key"} == bare.body
    assert {k: v for k, v in w.headers.items() if v != KEY} == bare.headers


@pytest.mark.parametrize("api", ["ollama", "anthropic"])
def test_apis_without_a_session_knob_send_no_key(api: str) -> None:
    s = entry(api=api)
    w = dialect_for(s).encode(small(), session_key=KEY, plan_usage=True)
    assert KEY not in w.body_bytes().decode()
    assert KEY not in w.headers.values()


@pytest.mark.parametrize(
    ("fields", "path", "headers"),
    [
        ({"api": "ollama"}, "/api/tags", {}),
        ({"api": "openai-chat", "family": "openrouter"}, "/v1/models", {}),
        ({"api": "responses"}, "/v1/models", {}),
        ({"api": "anthropic"}, "/v1/models", {"anthropic-version": "2023-06-01"}),
    ],
)
def test_model_list_request_never_carries_the_key(
    fields: dict[str, Any], path: str, headers: dict[str, str]
) -> None:
    s = entry(**fields)
    w = dialect_for(s).models_request()
    assert (w.method, w.path, w.headers, w.body) == ("GET", path, headers, None)
    assert w.body_bytes() == b""
