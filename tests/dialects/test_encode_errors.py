"""What a dialect cannot represent is refused with an error naming it, never dropped."""

from __future__ import annotations

from typing import Any

import pytest

from nodwyn.dialects import dialect_for
from nodwyn.errors import ConfigError, EncodeError, OriginError
from nodwyn.values.content import AssistantMessage, BlockType, Origin, ThinkingBlock, ToolCall
from nodwyn.values.model import ModelEntry
from nodwyn.values.request import Request

from .cases import IMAGES, entry, tools_images, user


def _encode(s: ModelEntry, r: Request, **kw: Any) -> None:
    dialect_for(s).encode(r, session_key=None, **kw)


def _with_block(s: ModelEntry, kind: BlockType, origin: Origin | None = None) -> Request:
    b = ThinkingBlock(type=kind, origin=origin or s.origin, data="[]" if kind == "reasoning_details" else "x")
    return Request(
        system="", tools=(), messages=(user("q"), AssistantMessage(text="a", blocks=(b,))), max_output=9
    )


@pytest.mark.parametrize(
    ("api", "kind"),
    [
        ("ollama", "thinking"),
        ("ollama", "reasoning_details"),
        ("openai-chat", "thinking"),
        ("openai-chat", "reasoning"),
        ("responses", "redacted_thinking"),
        ("responses", "reasoning_details"),
        ("anthropic", "reasoning"),
        ("anthropic", "reasoning_details"),
    ],
)
def test_a_block_type_the_api_cannot_read_is_refused(api: str, kind: BlockType) -> None:
    s = entry(api=api)
    with pytest.raises(
        EncodeError, match=rf"messages\[1\]\.blocks\[0\]: the {api} dialect cannot send a '{kind}' block"
    ):
        _encode(s, _with_block(s, kind))


@pytest.mark.parametrize("api", ["openai-chat", "responses", "anthropic"])
def test_a_block_of_another_origin_is_refused(api: str) -> None:
    s = entry(api=api, base_url="https://a.example", credential="KEY_A")
    kinds: dict[str, BlockType] = {
        "openai-chat": "reasoning_details",
        "responses": "reasoning",
        "anthropic": "thinking",
    }
    kind = kinds[api]
    elsewhere = Origin(model=s.model, url="https://a.example", credential="KEY_B")
    with pytest.raises(OriginError, match="credential KEY_B would go to"):
        _encode(s, _with_block(s, kind, elsewhere))


@pytest.mark.parametrize("api", ["ollama", "openai-chat", "responses", "anthropic"])
def test_images_need_takes_images_and_their_bytes(api: str) -> None:
    with pytest.raises(EncodeError, match=r"messages\[0\]\.parts\[1\]: model 'm' takes no images"):
        _encode(entry(api=api), tools_images(), images=IMAGES)
    with pytest.raises(EncodeError, match=r"bytes of image sha256:5e1f00d5 were not given"):
        _encode(entry(api=api, takes_images=True), tools_images(), images={})


def test_ollama_refuses_cache_control() -> None:
    with pytest.raises(EncodeError, match="Ollama's /api/chat has no cache_control"):
        _encode(
            entry(api="ollama", cache_control="ephemeral"),
            Request(system="", tools=(), messages=(user("q"),)),
        )


def test_anthropic_needs_max_output() -> None:
    with pytest.raises(EncodeError, match="Anthropic requires max_tokens"):
        _encode(entry(api="anthropic"), Request(system="", tools=(), messages=(user("q"),)))


def test_anthropic_refuses_empty_user_messages() -> None:
    with pytest.raises(EncodeError, match=r"messages\[0\]: an empty user message"):
        _encode(entry(api="anthropic"), Request(system="", tools=(), messages=(user(""),), max_output=9))


@pytest.mark.parametrize("api", ["ollama", "anthropic"])
def test_object_argument_apis_refuse_arguments_that_are_not_an_object(api: str) -> None:
    for bad, why in (("{not json", "are not JSON"), ("[1, 2]", "not an object")):
        call = ToolCall(id="c", name="f", arguments=bad)
        r = Request(system="", tools=(), messages=(user("q"), AssistantMessage(calls=(call,))), max_output=9)
        with pytest.raises(EncodeError, match=rf"messages\[1\]\.calls\[0\]: arguments .*{why}"):
            _encode(entry(api=api), r)


def test_corrupt_block_data_is_refused() -> None:
    s = entry(api="openai-chat", family="openrouter")
    b = ThinkingBlock(type="reasoning_details", origin=s.origin, data='{"not":"an array"}')
    r = Request(
        system="", tools=(), messages=(user("q"), AssistantMessage(text="a", blocks=(b,))), max_output=9
    )
    with pytest.raises(EncodeError, match="reasoning_details data is not a JSON array"):
        _encode(s, r)
    s2 = entry(api="responses")
    b2 = ThinkingBlock(type="reasoning", origin=s2.origin, data='{"type":"message"}')
    r2 = Request(
        system="", tools=(), messages=(user("q"), AssistantMessage(text="a", blocks=(b2,))), max_output=9
    )
    with pytest.raises(EncodeError, match="not a reasoning item"):
        _encode(s2, r2)


def test_local_api_has_no_dialect() -> None:
    with pytest.raises(ConfigError, match="api 'local' has no wire dialect"):
        dialect_for(entry(api="local"))


@pytest.mark.parametrize(
    ("effort", "think"), [("high", "high"), ("none", False), ("true", True), ("max", "max")]
)
def test_ollama_think_from_reasoning_effort(effort: str, think: object) -> None:
    s = entry(api="ollama", reasoning_effort=effort)
    w = dialect_for(s).encode(Request(system="", tools=(), messages=(user("q"),)), session_key=None)
    assert w.body is not None and w.body["think"] == think


@pytest.mark.parametrize(("api", "kind"), [("openai-chat", "reasoning_details"), ("responses", "reasoning")])
def test_block_data_that_is_not_json_is_an_encode_error(api: str, kind: BlockType) -> None:
    s = entry(api=api)
    b = ThinkingBlock(type=kind, origin=s.origin, data="{truncated")
    r = Request(
        system="", tools=(), messages=(user("q"), AssistantMessage(text="a", blocks=(b,))), max_output=9
    )
    with pytest.raises(EncodeError, match=r"messages\[1\].*not JSON"):
        _encode(s, r)
