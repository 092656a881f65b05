"""Dialects: pure translations between the provider-neutral request/response and one API's wire.

``dialect_for(settings)`` picks the module by ``settings.api``; see ``base`` for the protocol.
"""

from __future__ import annotations

from nodwyn.dialects.anthropic import AnthropicDialect
from nodwyn.dialects.base import Decoder, Dialect, StreamEvent, WireRequest
from nodwyn.dialects.ollama import OllamaDialect
from nodwyn.dialects.openai_chat import ChatDialect
from nodwyn.dialects.responses import ResponsesDialect
from nodwyn.dialects.session_key import session_key
from nodwyn.dialects.sse import NdjsonParser, SseParser
from nodwyn.errors import ConfigError
from nodwyn.values.model import ModelSettings

__all__ = [
    "Decoder",
    "Dialect",
    "NdjsonParser",
    "SseParser",
    "StreamEvent",
    "WireRequest",
    "dialect_for",
    "parser_for",
    "session_key",
]


def dialect_for(settings: ModelSettings) -> Dialect:
    """The dialect of the model entry's ``api`` (never guessed from the model's name or address)."""
    api = settings.api
    if api == "ollama":
        return OllamaDialect(settings)
    if api == "openai-chat":
        return ChatDialect(settings)
    if api == "responses":
        return ResponsesDialect(settings)
    if api == "anthropic":
        return AnthropicDialect(settings)
    raise ConfigError(
        f"model {settings.name!r}: api {api!r} has no wire dialect (the local model runs in process); "
        "use ollama, openai-chat, responses or anthropic"
    )


def parser_for(settings: ModelSettings) -> SseParser | NdjsonParser:
    """The stream framing of the entry's API: NDJSON for Ollama, SSE for the others."""
    return NdjsonParser() if settings.api == "ollama" else SseParser()
