"""What the person sees of the turn loop: a ``Display`` (the CLI prints, tests record, ``Quiet``
shows nothing). The model backend's protocol is ``transport.backend.Backend``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from nodwyn.agent.settings import AgentSettings, TurnResult
from nodwyn.agent.state import LoopState
from nodwyn.agent.tools import Outcome, ToolContext
from nodwyn.log import SessionLog
from nodwyn.values.content import ToolCall
from nodwyn.values.events import Event, Payload
from nodwyn.values.model import ModelEntry
from nodwyn.values.request import Response
from nodwyn.window import TurnOptions


class Display(Protocol):
    def delta(self, kind: str, fragment: str) -> None: ...
    def request(self, event: Event) -> None: ...
    def response(self, event: Event, response: Response) -> None: ...
    def tool_call(self, ctx: str, call: ToolCall) -> None: ...
    def tool_result(self, ctx: str, call: ToolCall, outcome: Outcome) -> None: ...
    def notice(self, text: str) -> None: ...


class Quiet:
    def delta(self, kind: str, fragment: str) -> None: ...
    def request(self, event: Event) -> None: ...
    def response(self, event: Event, response: Response) -> None: ...
    def tool_call(self, ctx: str, call: ToolCall) -> None: ...
    def tool_result(self, ctx: str, call: ToolCall, outcome: Outcome) -> None: ...
    def notice(self, text: str) -> None: ...


class Turns(Protocol):
    """What a strategy (``agent.strategies``) uses of the turn loop; ``agent.loop.Agent`` is one.
    Strategies take this, not the ``Agent`` class, so the loop imports them and they import
    nothing of it (no import circle)."""

    log: SessionLog
    settings: AgentSettings
    state: LoopState
    display: Display
    check_model: Callable[[ModelEntry], None] | None
    tool_context: ToolContext
    notes: Callable[[], list[str]] | None

    @property
    def model(self) -> ModelEntry: ...
    def append(self, payload: Payload, ctx: str | None = None) -> Event: ...
    def request(self, turn: TurnOptions, ctx: str | None = None) -> tuple[Event, Response]: ...
    def run(self, ctx: str, offered: Sequence[str] | None = None) -> TurnResult: ...
