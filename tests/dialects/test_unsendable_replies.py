"""No logged reply makes the conversation unsendable, in any dialect (issue 20, item 2; ADR 0310):
an empty reply, and a thinking-only reply whose blocks went stale (the window left them out, the
thinking text stays), each followed by another turn, encode; no message goes with an empty
content list or an empty text block."""

from __future__ import annotations

from typing import Any

import pytest

from nodwyn.dialects import dialect_for
from nodwyn.dialects.profiles import PROFILES
from nodwyn.values.content import AssistantMessage
from nodwyn.values.model import ModelEntry
from nodwyn.values.request import Request

from .cases import entry, user

ENTRIES = [entry(api=api) for api in ("ollama", "responses", "anthropic")] + [
    entry(api="openai-chat", family=family) for family in sorted(PROFILES)
]
REPLIES = {
    "empty": AssistantMessage(),
    "stale thinking only": AssistantMessage(thinking="Pondering."),
    "phase only": AssistantMessage(phase="commentary"),
}


def _contents(body: dict[str, Any]) -> list[Any]:
    turns = body.get("messages", body.get("input", []))
    return [t.get("content") for t in turns if isinstance(t, dict) and "content" in t]


@pytest.mark.parametrize("settings", ENTRIES, ids=lambda s: f"{s.api}/{s.family}")
@pytest.mark.parametrize("reply", sorted(REPLIES))
def test_a_reply_with_nothing_to_give_back_leaves_the_next_turn_sendable(
    settings: ModelEntry, reply: str
) -> None:
    request = Request(
        system="s", tools=(), messages=(user("one"), REPLIES[reply], user("two")), max_output=64
    )
    wire = dialect_for(settings).encode(request, session_key=None)
    assert wire.body is not None
    for content in _contents(wire.body):
        assert content != [], wire.body
        for part in content if isinstance(content, list) else []:
            assert part.get("type") not in ("text", "output_text") or part.get("text"), wire.body
    if settings.api == "anthropic":  # the reply says nothing: the user turns around it go as they are
        assert [m["role"] for m in wire.body["messages"]] == ["user", "user"]
        assert [m["content"][0]["text"] for m in wire.body["messages"]] == ["one", "two"]
    elif settings.api == "responses":
        assert [it.get("role") for it in wire.body["input"]] == ["user", "user"]
    else:  # chat and Ollama take an assistant message whose content is an empty string
        said = [m for m in wire.body["messages"] if m["role"] == "assistant"]
        assert len(said) == 1 and said[0]["content"] == ""
