"""What the four dialects share: settings, provider label, errors, the model list (request and reply)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodwyn.dialects.errors import parse_error
from nodwyn.dialects.wire import WireRequest, load_object
from nodwyn.errors import DecodeError, ProviderError
from nodwyn.values.model import ModelEntry


class DialectBase:
    api = ""
    models_path = ""
    asks_again_when_cut = False

    def __init__(self, settings: ModelEntry) -> None:
        self.settings = settings

    @property
    def provider(self) -> str:
        """How errors name the server: its configured name, else the family or API."""
        s = self.settings
        if s.server is not None:
            return s.server
        return s.family if s.api == "openai-chat" else s.api

    def base_headers(self) -> dict[str, str]:
        return {"content-type": "application/json"}

    def models_request(self) -> WireRequest:
        """The model list (``nodwyn models test``): never carries the session key."""
        headers = {k: v for k, v in self.base_headers().items() if k != "content-type"}
        return WireRequest(method="GET", path=self.models_path, headers=headers, body=None)

    def parse_error(
        self, status: int, body: bytes, headers: Mapping[str, str] | None = None
    ) -> ProviderError:
        return parse_error(self.provider, status, body, headers)

    def _load_body(self, body: bytes) -> dict[str, Any]:
        """A reply that was not streamed: one JSON object, or a DecodeError naming the provider."""
        return load_object(body, "the reply body", "the reply", self.provider)


# Where a model list publishes a model's context window, as each provider documents it:
# OpenRouter and Together ``context_length``, Groq ``context_window``, Mistral
# ``max_context_length``, vLLM ``max_model_len``. Read from the entry whose id is the model's;
# a list that publishes none of them leaves the context size to the person (ADR 0432).
CONTEXT_FIELDS = ("context_length", "context_window", "max_context_length", "max_model_len")


def model_context(reply: Any, model: str) -> tuple[int, str] | None:
    """The context window the model list ``reply`` publishes for ``model`` and the field it is in;
    None when the list has no entry for it or the entry publishes none."""
    entries = reply.get("data") if isinstance(reply, dict) else reply  # Together: a bare array
    if not isinstance(entries, list):
        return None
    for entry in entries:
        if isinstance(entry, dict) and entry.get("id") == model:
            for name in CONTEXT_FIELDS:
                value = entry.get(name)
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    return value, name
            return None
    return None


def model_ids(reply: Any, settings: ModelEntry) -> list[str]:
    """Model ids from a model-list reply: Ollama ``models[].name``, else ``data[].id`` (Together:
    a bare array of the same objects)."""
    if isinstance(reply, dict) and isinstance(reply.get("models"), list):
        return [str(m.get("name") or m.get("model")) for m in reply["models"] if isinstance(m, dict)]
    entries = reply.get("data") if isinstance(reply, dict) else reply
    if isinstance(entries, list):
        return [str(m["id"]) for m in entries if isinstance(m, dict) and "id" in m]
    raise DecodeError(
        f"{settings.name}: the model list has neither models[] nor data[]; check that the entry's api "
        f"({settings.api}) is the one the server at base_url speaks"
    )
