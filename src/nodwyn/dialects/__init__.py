"""Dialects: pure translations between the provider-neutral request/response and one API's wire.

``dialect_for(settings)`` picks the module by ``settings.api``; see ``base`` for the protocol.
"""

from __future__ import annotations

from nodwyn.dialects.apis import API_PROFILES, DIAGNOSING_APIS, WIRE_APIS, ApiProfile, api_profile
from nodwyn.dialects.base import CONTEXT_FIELDS, model_context, model_ids
from nodwyn.dialects.local import (
    Block,
    Piece,
    PromptFormat,
    blocks_of,
    format_for,
    parse_calls,
    reply_end,
    shared_prefix,
)
from nodwyn.dialects.local.calls import FABRICATED
from nodwyn.dialects.local.grammar import call_grammar
from nodwyn.dialects.session_key import session_key
from nodwyn.dialects.sse import NdjsonParser, SseParser
from nodwyn.dialects.wire import Decoder, Dialect, StreamEvent, WireRequest
from nodwyn.errors import ConfigError
from nodwyn.values.model import ModelEntry

__all__ = [
    "API_PROFILES", "CONTEXT_FIELDS", "DIAGNOSING_APIS", "FABRICATED", "ApiProfile", "Block", "Decoder",
    "Dialect", "NdjsonParser", "Piece", "PromptFormat", "SseParser", "StreamEvent", "WireRequest",
    "api_profile", "blocks_of", "call_grammar", "dialect_for", "format_for", "model_context", "model_ids",
    "parse_calls", "parser_for", "reply_end", "session_key", "shared_prefix",
]  # fmt: skip


def dialect_for(settings: ModelEntry) -> Dialect:
    """The dialect of the model entry's ``api`` (never guessed from the model's name or address)."""
    dialect = api_profile(settings).dialect
    if dialect is None:
        raise ConfigError(
            f"model {settings.name!r}: api {settings.api!r} has no wire dialect (the model runs in "
            f"process); use {', '.join(WIRE_APIS)}"
        )
    return dialect(settings)


def parser_for(settings: ModelEntry) -> SseParser | NdjsonParser:
    """The stream framing of the entry's API: NDJSON for Ollama, SSE for the others."""
    return NdjsonParser() if api_profile(settings).ndjson else SseParser()
