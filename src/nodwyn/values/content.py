"""Content parts and the provider-neutral messages built from them.

Identity (seq, time, context) lives on the log envelope (``values.events.Event``), never here.
Tool-call arguments are kept as the JSON text the model produced, so replay sees the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

BlockType = Literal["thinking", "redacted_thinking", "reasoning", "reasoning_details"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Origin:
    """Where a reasoning block (or a credential) came from, and so the only place it may go back.

    ``server`` names a configured server (None if the entry names none); ``url`` and
    ``credential`` (the credential's name, never its value) are the entry's address and
    credential, kept whether or not a server is named. ``model`` is the model id as sent on the
    wire. Older blocks that name a server alone go back to no one now.
    """

    model: str
    server: str | None = None
    url: str | None = None
    credential: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TextPart:
    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True, kw_only=True)
class ImagePart:
    """An image named by the SHA-256 of its bytes; the bytes live in the attachment store."""

    digest: str
    media_type: str
    width: int
    height: int
    kind: Literal["image"] = "image"


UserPart = TextPart | ImagePart


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text as the model produced it
    kind: Literal["tool_call"] = "tool_call"


def mint_call_ids(calls: tuple[ToolCall, ...], seq: int) -> tuple[ToolCall, ...]:
    """``calls`` with each missing id (Gemini's and Ollama's OpenAI-compatible servers send none)
    set to ``call_<seq>_<k>``: ``seq`` is the ``llm.req`` the reply answers, unique in the session,
    and ``k`` the call's index, so the id is unique and follows from the log alone. Calls that
    came with an id keep it (and so every recorded reply reads as before)."""
    if all(c.id for c in calls):
        return calls
    return tuple(
        c if c.id else ToolCall(id=f"call_{seq}_{k}", name=c.name, arguments=c.arguments)
        for k, c in enumerate(calls)
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingBlock:
    """A reasoning block kept as the provider gave it, given back only to its origin.

    ``type``: Anthropic ``thinking`` (data = signature) / ``redacted_thinking`` (data = data),
    Responses ``reasoning`` (data = the item JSON with encrypted_content, text = summary),
    OpenRouter ``reasoning_details`` (data = the array's JSON text as it came).
    ``position`` is how many of the reply's tool calls came before the block.
    """

    type: BlockType
    origin: Origin
    data: str
    text: str = ""
    position: int = 0
    kind: Literal["block"] = "block"


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessage:
    parts: tuple[UserPart, ...]
    role: Literal["user"] = "user"


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantMessage:
    """A reply as it goes back. ``raw``: the reply exactly as a local model wrote it, when that is
    not ``text`` (its calls written in the text); a local prompt format renders it as is."""

    text: str = ""
    thinking: str = ""
    calls: tuple[ToolCall, ...] = ()
    blocks: tuple[ThinkingBlock, ...] = ()
    phase: str | None = None  # Responses' message phase, when the reply had one (see Response.phase)
    raw: str | None = None
    role: Literal["assistant"] = "assistant"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolMessage:
    """A tool's result. ``images``: the images it returned (an MCP tool's), named by digest; a
    dialect whose API takes no images in a tool result sends them in a user message after the
    results (``dialects.wire.tool_images_after``)."""

    call_id: str
    name: str
    text: str
    error: bool = False
    images: tuple[ImagePart, ...] = ()
    role: Literal["tool"] = "tool"


Message = UserMessage | AssistantMessage | ToolMessage
