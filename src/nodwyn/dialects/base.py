"""What the four dialects share: settings, provider label, errors, the model list (request and reply)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodwyn.dialects.errors import parse_error
from nodwyn.dialects.wire import Decoder, WireRequest, loads, not_object
from nodwyn.errors import DecodeError, ProviderError
from nodwyn.values.content import Origin
from nodwyn.values.model import ModelEntry
from nodwyn.values.request import Response


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

    def decoder(self, origin: Origin) -> Decoder:
        raise NotImplementedError

    def decode_body(self, body: bytes, origin: Origin) -> Response:
        raise NotImplementedError

    def _load_body(self, body: bytes) -> dict[str, Any]:
        """A reply that was not streamed: one JSON object, or a DecodeError naming the provider."""
        value = loads(body, "the reply body", self.provider)
        if not isinstance(value, dict):
            raise not_object(self.provider, "the reply")
        return value


def model_ids(reply: Any, settings: ModelEntry) -> list[str]:
    """Model ids from a model-list reply: Ollama ``models[].name``, else ``data[].id``."""
    if isinstance(reply, dict):
        if isinstance(reply.get("models"), list):
            return [str(m.get("name") or m.get("model")) for m in reply["models"] if isinstance(m, dict)]
        if isinstance(reply.get("data"), list):
            return [str(m["id"]) for m in reply["data"] if isinstance(m, dict) and "id" in m]
    raise DecodeError(
        f"{settings.name}: the model list has neither models[] nor data[]; check that the entry's api "
        f"({settings.api}) is the one the server at base_url speaks"
    )
