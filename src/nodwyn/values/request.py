"""The provider-neutral request and response. Dialects translate these to and from the wire."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nodwyn.values.content import Message, ThinkingBlock, ToolCall


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """A model-facing tool: name, description and JSON-schema parameters (no floats: see canonical)."""

    name: str
    description: str
    parameters: dict[str, Any] = field(hash=False)


# A string property of a tool's schema marked ``{BLOCK_KEY: "fence" | "search" | "replace"}`` may be
# written as plain text after the call by a local prompt format with edit blocks (ADR 0440).
BLOCK_KEY = "x-block"


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """What the window decided to send. Its canonical JSON and digest identify it exactly.

    ``tools`` is what this request offers (the whole frozen catalog, a subset, or none);
    ``max_output`` caps the reply (recipe v8+; None before).
    """

    system: str
    tools: tuple[ToolSpec, ...]
    messages: tuple[Message, ...]
    max_output: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token counts as the provider reported them. ``None`` is unknown, never zero.

    ``prompt_tokens`` is the whole prompt: for Anthropic, input + cache read + cache write.
    """

    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Timings:
    prefill_ms: float | None = None
    total_ms: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheReport:
    """The provider's own diagnosis of a request's prompt-cache reuse (ADR 0312), asked for by
    naming an earlier reply (``against``: Anthropic's ``diagnostics.previous_message_id``, OpenAI
    Responses' ``prompt_cache_options.comparison_response_id``).

    ``reason`` is the provider's word as it sent it (``messages_changed``, ``input_changed``,
    ``previous_message_not_found``, ``unavailable``, ...), ``pending`` when it had not finished
    comparing (Anthropic's ``cache_miss_reason: null``), None when it found no divergence (a hit).
    ``missed_tokens``: the tokens it says were not reused, when it says.
    """

    against: str | None = None
    reason: str | None = None
    missed_tokens: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Response:
    text: str = ""
    thinking: str = ""
    calls: tuple[ToolCall, ...] = ()
    blocks: tuple[ThinkingBlock, ...] = ()
    usage: Usage = Usage()
    finish: str | None = None
    model: str | None = None
    timings: Timings = Timings()
    notes: tuple[str, ...] = ()  # e.g. "stream ended without a terminal event; asked again"
    # Responses: the assistant message's ``phase`` ("commentary", "final_answer"), resent with it;
    # None when the API gave none (and then absent from the log, so older replies read the same).
    phase: str | None = None
    # The reply exactly as a local model wrote it, when its calls were written in the text (``text``
    # is then the prose without them); it goes back as written. None: ``text`` and ``calls`` are it.
    raw: str | None = None
    # The provider's id of the reply (``msg_…``, ``resp_…``), kept only for a model whose entry
    # asks for cache diagnostics (the next request names it); and the provider's diagnosis of this
    # request's cache reuse, when one was asked for (ADR 0312). Both absent otherwise.
    id: str | None = None
    cache_report: CacheReport | None = None
