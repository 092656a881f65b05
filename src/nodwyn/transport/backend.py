"""What the agent sends a request through: the ``Backend`` protocol.

A backend is the HTTP backend (``transport.http.HttpBackend``) or the in-process local model
(``transport.local.LocalBackend``); tests give the same ones pointed at the fakes, or
``nodwyn.testing.ScriptedBackend``. ``diagnose_against`` is the provider's id of an earlier reply
to ask the provider's own cache diagnosis against (ADR 0312; only for an entry with
``cache_diagnostics``). ``close`` ends its part of the session (connections closed,
the local model's KV cache saved for a later resume).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from nodwyn.values.model import ModelEntry
from nodwyn.values.request import Request, Response


class Backend(Protocol):
    def send(
        self,
        request: Request,
        settings: ModelEntry,
        *,
        session_key: str | None,
        on_delta: Callable[[str, str], None] | None = None,
        images: Mapping[str, bytes] | None = None,
        diagnose_against: str | None = None,
    ) -> Response: ...

    def close(self) -> None: ...
