"""Real provider traffic (tests/data/traffic): every recorded reply decoded by nodwyn equals what
the official SDK builds from the same bytes; every recorded SSE reply, served over 127.0.0.1 to
``HttpBackend``, gives the same reply. The cases are the cassettes' interactions: a cassette
dropped into the right folder is tested with no code (see tests/data/traffic/README.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from nodwyn.dialects import dialect_for, parser_for
from nodwyn.errors import ProviderError
from nodwyn.transport.credentials import Credentials
from nodwyn.transport.http import HttpBackend
from nodwyn.values.content import AssistantMessage, TextPart, ToolCall, ToolMessage, UserMessage
from nodwyn.values.model import ModelEntry
from nodwyn.values.request import Request, Response

from .recorded import (
    EQUIVALENT,
    Case,
    SdkError,
    all_cases,
    as_the_server_gave,
    assistant_turn,
    comparable,
    empty_lists,
    seen_by_nodwyn,
    seen_by_sdk,
    serve,
    shape_differences,
)

CASES = all_cases()
# The openai SDK warns while serialising a web_search_call it parsed itself (its own union types).
pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")


def decode(case: Case, base_url: str | None = None) -> Response:
    """The recorded reply through nodwyn's dialect, as the transport would feed it."""
    settings = case.settings() if base_url is None else case.settings(base_url)
    dialect = dialect_for(settings)
    if case.status >= 400:
        raise dialect.parse_error(case.status, case.body, {"content-type": case.content_type})
    if not case.streamed:
        return dialect.decode_body(case.body, settings.origin)
    parser = parser_for(settings)
    dec = dialect.decoder(settings.origin)
    for i in range(0, len(case.body), 61):  # chunks that split lines, events and characters
        for ev in parser.feed(case.body[i : i + 61]):
            dec.feed(ev)
    for ev in parser.close():
        dec.feed(ev)
    return dec.finish()


def test_the_recorded_cases_are_there() -> None:
    apis = {c.api for c in CASES}
    assert apis == {"openai-chat", "responses", "anthropic"} and len(CASES) >= 39


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_recorded_reply_decodes_as_the_official_sdk_reads_it(case: Case) -> None:
    with serve(case) as url:
        try:
            oracle = seen_by_sdk(case, url)
        except SdkError as exc:
            with pytest.raises(ProviderError):
                decode(case)
            assert str(exc)  # the SDK refused it too
            return
    assert seen_by_nodwyn(case, decode(case)) == oracle


HI = Request(system="", tools=(), messages=(UserMessage(parts=(TextPart(text="hi"),)),), max_output=256)


@pytest.mark.parametrize("case", [c for c in CASES if c.streamed], ids=lambda c: c.id)
def test_a_recorded_stream_served_over_http_gives_the_same_reply(case: Case) -> None:
    with serve(case) as url, HttpBackend(Credentials(), max_retries=0) as backend:
        settings = case.settings(url)
        try:
            expected: Response | ProviderError = decode(case, url)
        except ProviderError as exc:
            expected = exc
        if isinstance(expected, ProviderError):
            with pytest.raises(ProviderError) as info:
                backend.send(HI, settings, session_key=None)
            assert str(info.value) == str(expected)
            return
        got = backend.send(HI, settings, session_key=None)
    assert got == expected


def _answered(case: Case | None) -> bool:
    try:
        return case is not None and bool(decode(case))
    except ProviderError:
        return False  # a refused reply: what the client sent next was not built from a reply


def _follow_ups() -> list[Case]:
    return [c for c in CASES if _answered(c.previous) and assistant_turn(c.api, c.request) is not None]


@pytest.mark.parametrize("case", _follow_ups(), ids=lambda c: c.id)
def test_a_recorded_follow_up_is_what_nodwyn_would_send(
    case: Case, record_property: Callable[[str, object], None]
) -> None:
    """The reply before it, decoded by nodwyn and encoded back in the same conversation, carries
    the reasoning/thinking blocks, tool-call ids and text the real client sent back."""
    assert case.previous is not None
    settings = case.settings()
    r = decode(case.previous)
    said = AssistantMessage(text=r.text, thinking=r.thinking, calls=r.calls, blocks=r.blocks, phase=r.phase)
    results = tuple(ToolMessage(call_id=c.id, name=c.name, text="result") for c in r.calls)
    request = Request(
        system="", tools=(), messages=(HI.messages[0], said, *results, HI.messages[0]), max_output=256
    )
    wire = dialect_for(settings).encode(request, session_key=None)
    assert wire.body is not None
    ours = assistant_turn(case.api, wire.body)
    theirs = assistant_turn(case.api, case.request, calls=[c.id for c in r.calls])
    assert ours is not None and theirs is not None
    with serve(case.previous) as url:
        oracle = seen_by_sdk(case.previous, url)
    expected, altered = as_the_server_gave(case.api, comparable(case.api, theirs, nodwyn=False), oracle)
    mine = comparable(case.api, ours, nodwyn=True)
    for i, part in enumerate(expected):  # the family decides the field thinking goes back in
        theirs_field = part.get("thinking", (None,))[0] if isinstance(part, dict) else None
        mine_field = next((p["thinking"][0] for p in mine if isinstance(p, dict) and "thinking" in p), None)
        if theirs_field and mine_field and theirs_field != mine_field:
            altered.append(f"thinking field ({theirs_field}; family {settings.family} sends {mine_field})")
            expected[i] = {"thinking": (mine_field, part["thinking"][1])}
    left_out = not any(isinstance(p, dict) and "thinking" in p for p in expected)
    if case.api == "openai-chat" and left_out and any("thinking" in p for p in mine):
        altered.append("thinking text (left out by the client)")  # no block: a client may leave it out
        mine = [p for p in mine if "thinking" not in p]
    record_property("altered", ", ".join(sorted(set(altered))))  # read by bench/recorded_traffic.py
    assert mine == expected
    assert not empty_lists(ours), empty_lists(ours)  # never an empty content list (issue 20)
    if r.phase is not None:  # the API asks for phase back on every assistant message
        said_items = [it for it in ours if it.get("type") == "message"]
        assert said_items and all(it.get("phase") == r.phase for it in said_items)
    if case.api == "responses":  # store: false: a reasoning item goes with its id and encrypted content
        body = wire.body
        assert body["store"] is False
        for it in ours:
            if it.get("type") == "reasoning" and any(b.get("encrypted_content") for b in oracle.blocks):
                assert it.get("id") and it.get("encrypted_content"), it
    differences = sorted(set(shape_differences(case.api, ours, theirs)))
    unknown = [d for d in differences if d not in EQUIVALENT]
    assert not unknown, f"differences from the client that no reference makes equivalent: {unknown}"
    # read by bench/recorded_traffic.py: each difference with the reference that makes it equal
    record_property("equivalent", json.dumps([[d, EQUIVALENT[d]] for d in differences]))


# Ollama's native /api/chat has no recorded cassette: its documented tool-calling follow-up (the
# request after a tool call, as Ollama's docs/api.md and docs/capabilities/tool-calling show it, read
# in ollama/ollama@fb3076099; wire-formats.md §1) stands in for the client.
OLLAMA_DOCS_FOLLOW_UP: dict[str, Any] = {
    "model": "qwen3",
    "messages": [
        {"role": "user", "content": "What is the weather today in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
        },
        {"role": "tool", "tool_name": "get_weather", "content": "22 degrees and sunny"},
    ],
    "stream": False,
}
OLLAMA_EQUIVALENT = {
    "ollama options.num_ctx sent (docs: none)": "sent on purpose: a request whose num_ctx differs "
    "from the loaded model's reloads it and loses its KV cache (ollama `server/sched.go` needsReload; "
    "dialects README)",
    "ollama truncate: false sent (docs: none, default true)": "sent on purpose: with truncate the server "
    "drops messages from the front when the prompt exceeds num_ctx (`server/prompt.go` chatPrompt), which "
    "changes the prefix behind the window's back",
    "ollama stream: true (docs: false)": "`ChatRequest.stream` defaults to true (`api/types.go`); nodwyn "
    "always streams, the docs example asks for one object",
    "ollama tool_calls[].id sent (docs: none)": "the server mints `call_<random>` ids (`server/routes.go` "
    "toolCallId()) and nodwyn sends them back as received (one it minted when a server gave none)",
    "ollama tool message: tool_call_id beside tool_name (docs: tool_name only)": "`Message.tool_call_id` is "
    "accepted beside `tool_name` (`api/types.go`)",
}


def _ollama_differences(ours: dict[str, Any], docs: dict[str, Any]) -> list[str]:
    out = []
    if "num_ctx" in ours.get("options", {}) and "options" not in docs:
        out.append("ollama options.num_ctx sent (docs: none)")
    if ours.get("truncate") is False and "truncate" not in docs:
        out.append("ollama truncate: false sent (docs: none, default true)")
    if ours["stream"] != docs["stream"]:
        out.append("ollama stream: true (docs: false)")
    (said,) = [m for m in ours["messages"] if m["role"] == "assistant"]
    (docs_said,) = [m for m in docs["messages"] if m["role"] == "assistant"]
    if any("id" in c for c in said["tool_calls"]) and not any("id" in c for c in docs_said["tool_calls"]):
        out.append("ollama tool_calls[].id sent (docs: none)")
    (result,) = [m for m in ours["messages"] if m["role"] == "tool"]
    if "tool_call_id" in result:
        out.append("ollama tool message: tool_call_id beside tool_name (docs: tool_name only)")
    return out


@pytest.mark.parametrize("name", ["ollama/docs/api-chat-tool-calling#1"])
def test_the_ollama_docs_follow_up_is_what_nodwyn_would_send(
    name: str, record_property: Callable[[str, object], None]
) -> None:
    settings = ModelEntry(name="m", api="ollama", model="qwen3", context_size=32768)
    call = ToolCall(id="call_k3x9", name="get_weather", arguments='{"city": "Paris"}')
    request = Request(
        system="",
        tools=(),
        messages=(
            UserMessage(parts=(TextPart(text="What is the weather today in Paris?"),)),
            AssistantMessage(calls=(call,)),
            ToolMessage(call_id=call.id, name=call.name, text="22 degrees and sunny"),
        ),
        max_output=None,
    )
    wire = dialect_for(settings).encode(request, session_key=None)
    assert wire.body is not None
    ours, docs = wire.body, OLLAMA_DOCS_FOLLOW_UP

    def said(m: dict[str, Any]) -> dict[str, Any]:  # what the conversation says, ids aside
        out = {k: v for k, v in m.items() if k != "tool_call_id"}
        if "tool_calls" in m:
            out["tool_calls"] = [{"function": c["function"]} for c in m["tool_calls"]]
        return out

    assert [said(m) for m in ours["messages"]] == [said(m) for m in docs["messages"]]
    assert [m["tool_calls"][0]["id"] for m in ours["messages"] if "tool_calls" in m] == [
        call.id
    ]  # as received
    assert not empty_lists(ours)
    differences = _ollama_differences(ours, docs)
    assert set(differences) <= set(OLLAMA_EQUIVALENT), differences
    assert set(ours) - set(docs) <= {"options", "truncate"}
    record_property("equivalent", json.dumps([[d, OLLAMA_EQUIVALENT[d]] for d in differences]))
