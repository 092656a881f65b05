"""A model's settings, as its ``[models.NAME]`` entry in config.toml gives them.

Capabilities are stated here by the person, never guessed from a model's name or address.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nodwyn.values.content import Origin

Api = Literal["local", "ollama", "openai-chat", "responses", "anthropic"]
# Server family of an openai-chat API: decides the reasoning field sent back, usage parsing,
# error shape and session headers. Chosen by the entry, never inferred.
Family = Literal[
    "compatible", "cerebras", "vllm", "deepseek", "llamacpp", "openrouter", "fireworks", "baseten"
]
CacheKey = Literal["session", "header", "off"]
CacheControl = Literal["ephemeral", "1h"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Prices:
    """US dollars per million tokens. ``cached_input``/``cache_write`` default to the input price."""

    input: float = 0.0
    output: float = 0.0
    cached_input: float | None = None
    cache_write: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelEntry:
    name: str  # the config entry's name: [models.NAME]
    api: Api
    model: str  # the model id on the wire
    context_size: int
    family: Family = "compatible"
    base_url: str | None = None
    server: str | None = None  # a named server; origins then name it instead of the URL
    credential: str | None = None  # the credential's name (env var or keychain entry), never its value
    keep_alive: str | None = None
    cache_key: CacheKey = "session"
    cache_control: CacheControl | None = None
    keep_reasoning: bool = False
    # openai-chat only: a reply's thinking goes back only as its reasoning_details, never as text
    # (OpenRouter routes to Claude, where unsigned thinking text fails the signature check).
    # The person sets it for such a route; it is never inferred from the model's name.
    reasoning_details_only: bool = False
    takes_images: bool = False
    # how an in-process model writes edits: "json" or "blocks" (ADR 0440); None: its prompt format's
    edits: str | None = None
    reasoning_effort: str | None = None
    prices: Prices | None = None  # None: the entry states no prices (its cost is unknown)
    # Ask the provider for its own cache diagnosis on every request after the first (Anthropic's
    # ``diagnostics``, OpenAI Responses' ``prompt_cache_options.comparison_response_id``; ADR
    # 0312). Off unless the entry says so: never inferred from a model's name.
    cache_diagnostics: bool = False

    @property
    def origin(self) -> Origin:
        """Where this model's reasoning blocks come from, and so the only place they go back to.

        The model, the server by name if the entry names one, and always its address and the name
        of its credential: a ChatGPT plan and an API key at the same host, under one ``server``
        label or none, may not read each other's encrypted reasoning (ADR 0111).
        """
        return Origin(model=self.model, server=self.server, url=self.base_url, credential=self.credential)
