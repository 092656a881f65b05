"""What the person sees of the turn loop: a ``Display`` (the CLI prints, tests record, ``Quiet``
shows nothing). The model backend's protocol is ``transport.backend.Backend``.
"""

from __future__ import annotations

from typing import Protocol

from nodwyn.agent.tools import Outcome
from nodwyn.values.content import ToolCall
from nodwyn.values.events import Event
from nodwyn.values.request import Response


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
