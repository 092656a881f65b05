"""Encoder output against request goldens written by hand from each provider's documented wire format."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nodwyn.dialects import dialect_for
from nodwyn.values.content import AssistantMessage, ThinkingBlock, ToolCall, ToolMessage
from nodwyn.values.model import ModelEntry
from nodwyn.values.request import Request

from .cases import (
    DETAILS_1,
    FS_READ,
    GOLDEN,
    IMAGES,
    KEY,
    RS_1,
    RS_2,
    check_golden,
    entry,
    small,
    tools_images,
    two_calls,
    user,
    wire_json,
)


def _openrouter_details(s: ModelEntry) -> Request:
    o = s.origin
    return Request(
        system="S",
        tools=(FS_READ,),
        messages=(
            user("Hi"),
            AssistantMessage(
                thinking="Need the file.",
                calls=(ToolCall(id="call_1", name="fs_read", arguments='{"path":"a.txt"}'),),
                blocks=(ThinkingBlock(type="reasoning_details", origin=o, data=DETAILS_1),),
            ),
            ToolMessage(call_id="call_1", name="fs_read", text="hello"),
            AssistantMessage(
                text="Done.", blocks=(ThinkingBlock(type="reasoning_details", origin=o, data="[]"),)
            ),
            user("Thanks."),
        ),
        max_output=1024,
    )


def _responses_blocks(s: ModelEntry) -> Request:
    o = s.origin
    return two_calls(
        (
            ThinkingBlock(type="reasoning", origin=o, data=RS_1, text="Look first.", position=0),
            ThinkingBlock(type="reasoning", origin=o, data=RS_2, text="", position=1),
        ),
        thinking="Look first.",
    )


def _anthropic_blocks(s: ModelEntry) -> Request:
    o = s.origin
    return two_calls(
        (
            ThinkingBlock(
                type="thinking",
                origin=o,
                data="EqQBCkYIBxgCKkA1",
                text="Need to read a.py first.",
                position=0,
            ),
            ThinkingBlock(type="redacted_thinking", origin=o, data="EmwKAhgBEgy3va3pzix", position=1),
        ),
        thinking="Need to read a.py first.",
    )


Case = tuple[str, dict[str, Any], Callable[[ModelEntry], Request], dict[str, Any]]
CASES: list[Case] = [
    (
        "ollama/tools_images",
        {
            "api": "ollama",
            "model": "qwen3:8b",
            "context_size": 32768,
            "keep_alive": "30m",
            "takes_images": True,
        },
        lambda s: tools_images(),
        {"session_key": KEY},
    ),
    (
        "ollama/think_level",
        {"api": "ollama", "model": "gpt-oss:20b", "context_size": 8192, "reasoning_effort": "high"},
        lambda s: small(calls=False),
        {"session_key": None, "stream": False},
    ),
    (
        "openai_chat/compatible",
        {"api": "openai-chat", "model": "gpt-5.6", "takes_images": True, "reasoning_effort": "high"},
        lambda s: tools_images(),
        {"session_key": KEY},
    ),
    (
        "openai_chat/cerebras",
        {"api": "openai-chat", "family": "cerebras", "model": "qwen-3.8-27b", "cache_key": "header"},
        lambda s: small(),
        {"session_key": KEY},
    ),
    (
        "openai_chat/deepseek",
        {"api": "openai-chat", "family": "deepseek", "model": "deepseek-v4", "cache_key": "off"},
        lambda s: small(thinking=""),
        {"session_key": KEY},
    ),
    (
        "openai_chat/openrouter_details",
        {"api": "openai-chat", "family": "openrouter", "model": "meta/muse-spark-1.3", "cache_control": "1h"},
        _openrouter_details,
        {"session_key": KEY},
    ),
    (
        "openai_chat/openrouter_claude",
        {
            "api": "openai-chat",
            "family": "openrouter",
            "model": "anthropic/claude-sonnet-5.5",
            "cache_control": "ephemeral",
            "reasoning_details_only": True,
        },
        lambda s: small(),
        {"session_key": None},
    ),
    (
        "openai_chat/fireworks",
        {"api": "openai-chat", "family": "fireworks", "model": "accounts/fireworks/models/kimi-k3"},
        lambda s: small(calls=False),
        {"session_key": KEY},
    ),
    (
        "openai_chat/baseten",
        {"api": "openai-chat", "family": "baseten", "model": "zai-org/GLM-5", "cache_key": "header"},
        lambda s: small(calls=False),
        {"session_key": KEY, "stream": False},
    ),
    (
        "openai_chat/vllm",
        {"api": "openai-chat", "family": "vllm", "model": "Qwen/Qwen3.5-32B"},
        lambda s: small(),
        {"session_key": None},
    ),
    (
        "openai_chat/llamacpp",
        {"api": "openai-chat", "family": "llamacpp", "model": "gemma-4"},
        lambda s: small(),
        {"session_key": None},
    ),
    (
        "responses/keep_reasoning",
        {"api": "responses", "model": "gpt-6.1-sol", "keep_reasoning": True, "reasoning_effort": "high"},
        _responses_blocks,
        {"session_key": KEY, "plan_usage": True},
    ),
    (
        "responses/plain",
        {"api": "responses", "model": "gpt-5.6", "takes_images": True},
        lambda s: tools_images(),
        {"session_key": None},
    ),
    (
        "anthropic/blocks",
        {"api": "anthropic", "model": "claude-sonnet-5-5", "cache_control": "ephemeral"},
        _anthropic_blocks,
        {"session_key": KEY},
    ),
    (
        "anthropic/tools_images",
        {
            "api": "anthropic",
            "model": "claude-haiku-5-5",
            "cache_control": "1h",
            "reasoning_effort": "high",
            "takes_images": True,
        },
        lambda s: tools_images(),
        {"session_key": KEY},
    ),
]


@pytest.mark.parametrize(("name", "fields", "build", "kw"), CASES, ids=[c[0] for c in CASES])
def test_request_matches_golden(
    name: str, fields: dict[str, Any], build: Callable[[ModelEntry], Request], kw: dict[str, Any]
) -> None:
    settings = entry(**fields)
    wire = dialect_for(settings).encode(build(settings), images=IMAGES, **kw)
    check_golden(GOLDEN / f"{name}.request.json", wire_json(wire))
