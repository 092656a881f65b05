"""What the turn loop talks to, given to it as arguments: the model backend and the display.

A ``Backend`` is the HTTP backend (``transport.http.HttpBackend``) or the in-process local model
(``transport.local.LocalBackend``); tests give the same ones pointed at the fakes. A ``Display`` is
what the person sees: the CLI prints, tests record, ``Quiet`` shows nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from nodwyn.agent.tools import Outcome
from nodwyn.values.content import ToolCall
from nodwyn.values.events import Event
from nodwyn.values.model import ModelSettings
from nodwyn.values.request import Request, Response


class Backend(Protocol):
    def send(
        self,
        request: Request,
        settings: ModelSettings,
        *,
        session_key: str | None,
        on_delta: Callable[[str, str], None] | None = None,
        images: Mapping[str, bytes] | None = None,
    ) -> Response: ...


class Display(Protocol):
    def delta(self, kind: str, fragment: str) -> None: ...
    def request(self, event: Event) -> None: ...
    def response(self, event: Event, response: Response) -> None: ...
    def tool_call(self, ctx: str, call: ToolCall) -> None: ...
    def tool_result(self, ctx: str, call: ToolCall, outcome: Outcome) -> None: ...
    def notice(self, text: str) -> None: ...


class Quiet:
    def delta(self, kind: str, fragment: str) -> None:
        pass

    def request(self, event: Event) -> None:
        pass

    def response(self, event: Event, response: Response) -> None:
        pass

    def tool_call(self, ctx: str, call: ToolCall) -> None:
        pass

    def tool_result(self, ctx: str, call: ToolCall, outcome: Outcome) -> None:
        pass

    def notice(self, text: str) -> None:
        pass
