"""What each API is, as one value per API (issue 22, ADR 0342).

The API comes from the model entry (``ModelEntry.api``), never from a model's name or address.
Every place above the dialects that treats APIs differently reads the API's ``ApiProfile`` here
(``api_profile(settings)``): whether the model runs in this process or at an address, the header a
credential goes in, whether a request records a cache ask and the ask an entry gets when it names
none, whether the entry's server family applies, and the dialect and stream framing that speak it.
This module is the only one that names an API (``tests/dialects/test_profiles.py``); a new API is a
new row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

from nodwyn.dialects.anthropic import AnthropicDialect
from nodwyn.dialects.ollama import OllamaDialect
from nodwyn.dialects.openai_chat import ChatDialect
from nodwyn.dialects.responses import ResponsesDialect
from nodwyn.dialects.wire import Dialect
from nodwyn.values.model import Api, CacheControl, ModelEntry

AuthHeader = Literal["authorization", "x-api-key"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiProfile:
    # the model runs in this process (the weights nodwyn installs), not at a served address
    in_process: bool = False
    # the dialect that encodes requests and decodes replies (None: no wire, the model is in process)
    dialect: Callable[[ModelEntry], Dialect] | None = None
    # the stream's framing: NDJSON lines, else server-sent events
    ndjson: bool = False
    # the header a credential goes in when its entry names none: Bearer authorization, or the key
    auth_header: AuthHeader = "authorization"
    # requests record what they asked of the provider's cache (the entry's ask, or "none"; ADR 0112)
    records_cache_ask: bool = False
    # the cache ask of an entry that names none (an API that caches nothing unless asked)
    default_cache_control: CacheControl | None = None
    # the entry's server family applies (the chat-completions API's servers differ by family)
    has_family: bool = False
    # the provider reports its own cache diagnosis of a request (``cache_diagnostics``, ADR 0312)
    reports_cache_diagnosis: bool = False


API_PROFILES: Final[dict[Api, ApiProfile]] = {
    "local": ApiProfile(in_process=True),
    "ollama": ApiProfile(dialect=OllamaDialect, ndjson=True),
    "openai-chat": ApiProfile(dialect=ChatDialect, records_cache_ask=True, has_family=True),
    "responses": ApiProfile(dialect=ResponsesDialect, records_cache_ask=True, reports_cache_diagnosis=True),
    "anthropic": ApiProfile(
        dialect=AnthropicDialect,
        auth_header="x-api-key",
        records_cache_ask=True,
        default_cache_control="ephemeral",
        reports_cache_diagnosis=True,
    ),
}

# The APIs served at an address, in the table's order (for messages naming what to use).
WIRE_APIS: Final = tuple(api for api, p in API_PROFILES.items() if p.dialect is not None)
# The APIs whose providers report their own cache diagnosis.
DIAGNOSING_APIS: Final = tuple(api for api, p in API_PROFILES.items() if p.reports_cache_diagnosis)


def api_profile(settings: ModelEntry | str) -> ApiProfile:
    """The profile of a model entry's API (or of an API by name, as a config table gives it);
    ``KeyError`` for a name that is not an API (config refuses those first)."""
    api = settings if isinstance(settings, str) else settings.api
    return API_PROFILES[api]  # type: ignore[index]
