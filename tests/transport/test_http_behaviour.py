"""HttpBackend's guarantees, shown against real fakes on 127.0.0.1: origins (two fakes on different
ports), retries honouring Retry-After (delays recorded by an injected sleep), a Responses stream
without its terminal event asked again once, and errors that name status, message and field."""

from __future__ import annotations

import dataclasses
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from nodwyn.errors import DecodeError, OriginError, ProviderError, ProviderUnavailable
from nodwyn.fakes import FakeApi, FakeServer
from nodwyn.transport.credentials import Credential, Credentials, origin_of
from nodwyn.transport.http import ASKED_AGAIN, HttpBackend, join_url
from nodwyn.values.content import AssistantMessage, ToolMessage
from nodwyn.values.request import Request

from .convo import SECRET, SYSTEM, TOOLS, backend_for, converse, script, settings_for, user


def _request(text: str = "hello") -> Request:
    return Request(system=SYSTEM, tools=TOOLS, messages=(user(text),), max_output=100)


# -- origin ------------------------------------------------------------------------------------


def test_a_credential_bound_to_one_fake_is_refused_for_another_before_sending() -> None:
    with (
        FakeServer(api="openai-chat", script=script(2)) as a,
        FakeServer(api="openai-chat", script=script(2)) as b,
    ):
        backend = backend_for(a.url)  # KEY may reach a only
        backend.send(_request(), settings_for(a.url, "openai-chat"), session_key=None)
        with pytest.raises(OriginError) as err:
            backend.send(_request(), settings_for(b.url, "openai-chat"), session_key=None)
        with pytest.raises(OriginError):
            backend.list_models(settings_for(b.url, "openai-chat"))
        assert b.requests == [] and len(b.remaining) == 2  # nothing reached b
        assert len(a.requests) == 1 and a.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in str(err.value) and origin_of(b.url) in str(err.value)


@pytest.mark.parametrize("api", ["anthropic", "responses", "openai-chat"])
def test_a_reasoning_block_never_reaches_another_origin(api: FakeApi) -> None:
    extra = {"keep_reasoning": True} if api == "responses" else {}
    family = "openrouter" if api == "openai-chat" else None
    details = [{"type": "reasoning.encrypted", "format": "openai-responses-v1"}]
    items = [{**s, "reasoning_details": details} for s in script(3)] if family else script(3)
    with (
        FakeServer(api=api, family=family, script=items) as a,
        FakeServer(api=api, family=family, script=items) as b,
    ):
        creds = Credentials.of(
            [
                Credential(name="A", value=SECRET, origins=frozenset({origin_of(a.url)})),
                Credential(name="B", value=SECRET + "b", origins=frozenset({origin_of(b.url)})),
            ]
        )
        fields = {"family": family} if family else {}
        on_a = dataclasses.replace(settings_for(a.url, api, **fields, **extra), credential="A")
        on_b = dataclasses.replace(settings_for(b.url, api, **fields, **extra), credential="B")
        with HttpBackend(creds) as backend:
            replies = converse(backend, on_a, 1)
            assert replies[0].blocks and replies[0].blocks[0].origin == on_a.origin
            reply = replies[0]
            history = (
                user("Please look at the repository and explain it. " * 10),
                AssistantMessage(
                    text=reply.text, thinking=reply.thinking, calls=reply.calls, blocks=reply.blocks
                ),
            )
            results = tuple(ToolMessage(call_id=c.id, name=c.name, text="file") for c in reply.calls)
            moved = Request(system=SYSTEM, tools=TOOLS, messages=history + results, max_output=100)
            # the model switched to b: a's blocks may not go there
            with pytest.raises(OriginError):
                backend.send(moved, on_b, session_key=None)
            assert b.requests == []
            # as the window sends it after a switch: the blocks left out, the thinking kept
            stripped = dataclasses.replace(history[1], blocks=())
            backend.send(
                dataclasses.replace(moved, messages=(history[0], stripped, *results)), on_b, session_key=None
            )
            # and back on a they go again, where they were
            backend.send(moved, on_a, session_key=None)
        got_b = b.requests[0].raw
        got_a = a.requests[1].raw
    for block in reply.blocks:
        assert block.data and block.data not in got_b.decode()
    assert any(
        block.data in got_a.decode() or block.data.replace('"', '\\"') in got_a.decode()
        for block in reply.blocks
    )


# -- retries -----------------------------------------------------------------------------------


def test_retries_honour_retry_after_then_back_off() -> None:
    items: list[dict[str, Any]] = [
        {"error": {"status": 429, "message": "Rate limit reached", "retry_after": 2.5}},
        {"error": {"status": 503, "message": "upstream unavailable"}},
        {"text": "finally"},
    ]
    delays: list[float] = []
    with FakeServer(api="openai-chat", script=items) as fake:
        cred = Credential(name="KEY", value=SECRET, origins=frozenset({origin_of(fake.url)}))
        with HttpBackend(Credentials.of([cred]), sleep=delays.append, backoff=0.5) as backend:
            reply = backend.send(_request(), settings_for(fake.url, "openai-chat"), session_key="k" * 64)
        raws = [r.raw for r in fake.requests]
    assert reply.text == "finally"
    assert delays == [2.5, 1.0]  # Retry-After as given; then backoff 0.5 * 2**1
    assert len(raws) == 3 and len(set(raws)) == 1  # the same bytes each time


def test_retry_after_is_bounded_and_retries_are_bounded() -> None:
    items = [
        {"error": {"status": 529, "message": "Overloaded", "type": "overloaded_error", "retry_after": 600}}
    ] * 3
    delays: list[float] = []
    with FakeServer(api="anthropic", script=items) as fake:
        cred = Credential(name="KEY", value=SECRET, origins=frozenset({origin_of(fake.url)}))
        backend = HttpBackend(Credentials.of([cred]), sleep=delays.append, max_retries=2, max_delay=30)
        with pytest.raises(ProviderUnavailable) as err:
            backend.send(_request(), settings_for(fake.url, "anthropic"), session_key=None)
        assert not fake.remaining
    assert delays == [30, 30]
    assert err.value.status == 529 and "Overloaded" in str(err.value) and "\n" not in str(err.value)


def test_a_dead_server_is_named_at_once_without_retries() -> None:
    """Connection refused: nothing listens there, so waiting cannot help (ADR 0140)."""
    with FakeServer(api="ollama") as fake:
        url = fake.url
    delays: list[float] = []
    backend = HttpBackend(Credentials(), sleep=delays.append, max_retries=3, backoff=1)
    with pytest.raises(ProviderUnavailable, match=origin_of(url)) as err:
        backend.send(_request(), settings_for(url, "ollama", credential=None), session_key=None)
    assert delays == [] and "refused the connection" in str(err.value)


def test_errors_without_retry_after_back_off_exponentially() -> None:
    items = [{"error": {"status": 503, "message": "busy"}}] * 4
    delays: list[float] = []
    with FakeServer(api="ollama", script=items) as fake:
        backend = HttpBackend(Credentials(), sleep=delays.append, max_retries=3, backoff=1)
        with pytest.raises(ProviderUnavailable, match="busy"):
            backend.send(_request(), settings_for(fake.url, "ollama", credential=None), session_key=None)
        assert len(fake.requests) == 4
    assert delays == [1, 2, 4]


# -- incomplete streams ------------------------------------------------------------------------


def test_a_responses_stream_without_its_terminal_event_is_asked_again_once() -> None:
    items: list[dict[str, Any]] = [{"text": "partial answer", "cut": True}, {"text": "whole answer"}]
    with FakeServer(api="responses", script=items) as fake:
        with backend_for(fake.url) as backend:
            reply = backend.send(_request(), settings_for(fake.url, "responses"), session_key="k" * 64)
        raws = [r.raw for r in fake.requests]
    assert reply.text == "whole answer" and reply.notes == (ASKED_AGAIN,)
    assert len(raws) == 2 and raws[0] == raws[1]


def test_asked_again_only_once() -> None:
    items = [{"text": "partial", "cut": True}] * 3
    with FakeServer(api="responses", script=items) as fake:
        with backend_for(fake.url) as backend, pytest.raises(DecodeError):
            backend.send(_request(), settings_for(fake.url, "responses"), session_key=None)
        assert len(fake.requests) == 2


@pytest.mark.parametrize("api", ["openai-chat", "responses", "anthropic", "ollama"])
def test_a_server_that_ignores_stream_true_is_read_as_one_json_reply(api: FakeApi) -> None:
    """A server or proxy that answers a streamed request with one JSON object (application/json)
    gives the same reply as its stream would, shown at once through on_delta."""
    item = {
        "thinking": "Look first.",
        "text": "Reading it.",
        "calls": [{"name": "fs-read", "arguments": {"path": "a.py"}, "id": "call_1"}],
    }
    shown: list[tuple[str, str]] = []
    with FakeServer(api=api, script=[item, {**item, "quirks": ["whole_reply"]}]) as fake:
        with backend_for(fake.url) as backend:
            settings = settings_for(fake.url, api)
            streamed = backend.send(_request(), settings, session_key=None)
            whole = backend.send(
                _request(), settings, session_key=None, on_delta=lambda k, t: shown.append((k, t))
            )
        asked = [r.body for r in fake.requests]
    assert all(body.get("stream") is not False for body in asked)  # a stream was asked both times
    assert (whole.text, whole.thinking, whole.calls) == (streamed.text, streamed.thinking, streamed.calls)
    assert whole.usage.prompt_tokens == streamed.usage.prompt_tokens
    assert streamed.usage.prompt_tokens is not None and streamed.usage.prompt_tokens > 0
    assert shown == [("thinking", "Look first."), ("text", "Reading it.")]


def test_a_cut_chat_stream_is_an_error_not_a_short_reply() -> None:
    with FakeServer(api="openai-chat", script=[{"text": "partial", "cut": True}, {"text": "x"}]) as fake:
        with backend_for(fake.url) as backend, pytest.raises(DecodeError):
            backend.send(_request(), settings_for(fake.url, "openai-chat"), session_key=None)
        assert len(fake.requests) == 1


# -- errors ------------------------------------------------------------------------------------


def test_a_wrong_family_is_refused_with_status_message_and_field() -> None:
    """A Cerebras server configured as the default family: the server's 400 names the field."""
    items = [{"thinking": "hmm", "text": "one"}, {"text": "two"}]
    fake = FakeServer(api="openai-chat", family="cerebras", script=items, api_key=SECRET)
    with fake, backend_for(fake.url) as backend:
        first = backend.send(_request(), settings_for(fake.url, "openai-chat"), session_key=None)
        again = Request(
            system=SYSTEM,
            tools=TOOLS,
            messages=(
                user("hello"),
                AssistantMessage(text=first.text, thinking=first.thinking),
                user("more"),
            ),
        )
        with pytest.raises(ProviderError) as err:
            backend.send(again, settings_for(fake.url, "openai-chat"), session_key=None)
        fixed = backend.send(
            again, settings_for(fake.url, "openai-chat", family="cerebras"), session_key=None
        )
    e = err.value
    assert e.status == 400 and e.field == "messages.2.assistant.reasoning_content" and not e.retryable
    assert "HTTP 400" in str(e) and "is unsupported" in str(e) and SECRET not in str(e)
    assert fixed.text == "two"


def test_deepseek_without_reasoning_content_on_a_tool_turn_names_the_field() -> None:
    items: list[dict[str, Any]] = [
        {"calls": [{"name": "fs-read", "arguments": {"path": "a"}}]},
        {"text": "done"},
    ]
    with FakeServer(api="openai-chat", family="deepseek", script=items) as fake:
        settings = settings_for(fake.url, "openai-chat", family="vllm")  # misconfigured
        with backend_for(fake.url) as backend, pytest.raises(ProviderError) as err:
            converse(backend, settings, 2)
    assert err.value.status == 400 and err.value.field == "reasoning_content"


@pytest.mark.parametrize("api", ["ollama", "openai-chat", "responses", "anthropic"])
def test_script_exhaustion_surfaces_as_one_clear_line(api: FakeApi) -> None:
    fake = FakeServer(api=api, script=[])
    with fake, backend_for(fake.url) as backend, pytest.raises(ProviderError) as err:
        backend.send(_request(), settings_for(fake.url, api, credential=None), session_key=None)
    assert err.value.status == 410 and "script exhausted" in str(err.value) and "\n" not in str(err.value)


def test_join_url_does_not_double_v1() -> None:
    assert (
        join_url("https://openrouter.ai/api/v1", "/v1/chat/completions")
        == "https://openrouter.ai/api/v1/chat/completions"
    )
    assert join_url("http://127.0.0.1:9/", "/api/chat") == "http://127.0.0.1:9/api/chat"


@pytest.mark.parametrize(
    ("api", "family"),
    [
        ("openai-chat", None),
        ("openai-chat", "openrouter"),
        ("responses", None),
        ("anthropic", None),
    ],
)
def test_a_mid_stream_overload_is_retried_only_before_anything_was_shown(
    api: FakeApi, family: str | None
) -> None:
    """(Ollama's mid-stream error is a bare string with no type, so the dialect does not retry it.)"""
    overload = {"status": 529, "message": "Overloaded", "type": "overloaded_error", "mid_stream": True}
    items: list[dict[str, Any]] = [
        {"error": overload},
        {"text": "fine"},
        {"text": "half a reply", "error": overload},
    ]
    delays: list[float] = []
    shown: list[str] = []
    fields = {"family": family} if family else {}
    with FakeServer(api=api, family=family, script=items) as fake:
        cred = Credential(name="KEY", value=SECRET, origins=frozenset({origin_of(fake.url)}))
        settings = settings_for(fake.url, api, credential=None if api == "ollama" else "KEY", **fields)
        with HttpBackend(Credentials.of([cred]), sleep=delays.append) as backend:
            assert (
                backend.send(
                    _request(), settings, session_key=None, on_delta=lambda k, t: shown.append(t)
                ).text
                == "fine"
            )
            with pytest.raises(ProviderError) as err:
                backend.send(_request(), settings, session_key=None, on_delta=lambda k, t: shown.append(t))
        statuses = len(fake.requests)
    assert delays == [1.0] and statuses == 3  # the second failure had shown text: not asked again
    assert "".join(shown) == "fine" + "half a reply"
    assert "Overloaded" in str(err.value) and "\n" not in str(err.value)


def test_a_redirect_is_not_followed_with_the_credential() -> None:
    seen: list[dict[str, str]] = []
    with FakeServer(api="openai-chat", script=[{"text": "x"}]) as target:

        class Redirect(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                seen.append(dict(self.headers))
                self.send_response(307)
                self.send_header("location", target.url + "/v1/chat/completions")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            with backend_for(url) as backend, pytest.raises(ProviderError, match="HTTP 307") as err:
                backend.send(_request(), settings_for(url, "openai-chat"), session_key=None)
        finally:
            server.shutdown()
            server.server_close()
        assert target.requests == []  # the key never followed the redirect
    assert len(seen) == 1 and target.url in str(err.value) and SECRET not in str(err.value)
