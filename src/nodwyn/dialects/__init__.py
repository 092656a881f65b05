"""Dialects: pure translations between the provider-neutral request/response and one API's wire.

``dialect_for(settings)`` picks the module by ``settings.api``; see ``base`` for the protocol.
"""

from __future__ import annotations

from nodwyn.dialects.apis import API_PROFILES, WIRE_APIS, ApiProfile, api_profile
from nodwyn.dialects.base import Decoder, Dialect, StreamEvent, WireRequest
from nodwyn.dialects.common import CONTEXT_FIELDS, model_context
from nodwyn.dialects.session_key import session_key
from nodwyn.dialects.sse import NdjsonParser, SseParser
from nodwyn.errors import ConfigError
from nodwyn.values.model import ModelSettings

__all__ = [
    "API_PROFILES",
    "CONTEXT_FIELDS",
    "ApiProfile",
    "Decoder",
    "Dialect",
    "NdjsonParser",
    "SseParser",
    "StreamEvent",
    "WireRequest",
    "api_profile",
    "dialect_for",
    "model_context",
    "parser_for",
    "session_key",
]


def dialect_for(settings: ModelSettings) -> Dialect:
    """The dialect of the model entry's ``api`` (never guessed from the model's name or address)."""
    dialect = api_profile(settings).dialect
    if dialect is None:
        raise ConfigError(
            f"model {settings.name!r}: api {settings.api!r} has no wire dialect (the model runs in "
            f"process); use {', '.join(WIRE_APIS)}"
        )
    return dialect(settings)


def parser_for(settings: ModelSettings) -> SseParser | NdjsonParser:
    """The stream framing of the entry's API: NDJSON for Ollama, SSE for the others."""
    return NdjsonParser() if api_profile(settings).ndjson else SseParser()
