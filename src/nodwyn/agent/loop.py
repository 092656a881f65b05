"""The turn loop: request -> streamed reply -> tool calls -> results, every step logged.

Every request is built by the window from the log (``record.Recorder.request`` records its
``llm.req`` with the digest before it is sent); the reply is logged as ``llm.resp`` (``agent.reply``
decides what of it the log may keep), each call's answer as ``tool.result`` (``agent.dispatch``).
A tool never raises into the loop: bad input comes back to the model as an error result. A provider
failure is logged as a note and raised: the session stops, and ``nodwyn resume`` continues it from
the log, which has lost nothing. The strategies (planner, sub-agent, compaction, hygiene folds) run
here on the rules and texts of ``agent.strategies``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodwyn.agent import reply, strategies
from nodwyn.agent.attach import image_ref, model_host, withheld
from nodwyn.agent.dispatch import recall_text, result_data, tool_context
from nodwyn.agent.ports import Display, Quiet
from nodwyn.agent.state import LoopState
from nodwyn.agent.tools import SUB_AGENT, Approver, Outcome, Tool, run_call
from nodwyn.dialects.session_key import session_key
from nodwyn.errors import (
    ConfigError,
    EncodeError,
    OriginError,
    ProviderError,
)
from nodwyn.log import SessionLog
from nodwyn.log.redact import redact_error
from nodwyn.record import Recorder, resumed_events
from nodwyn.transport.backend import Backend
from nodwyn.values.codec import response_to_json
from nodwyn.values.content import ToolCall, mint_call_ids
from nodwyn.values.events import Event
from nodwyn.values.model import ModelSettings
from nodwyn.values.recipe import Recipe
from nodwyn.values.request import Response
from nodwyn.window import TurnOptions, Window

MAX_STEPS = 24


def cache_ask(settings: ModelSettings) -> str | None:
    """What the request asks of the provider's cache, for the APIs that send an ask (ADR 0112)."""
    if settings.api in ("openai-chat", "responses", "anthropic"):
        return settings.cache_control or "none"
    return None


@dataclass(slots=True)
class TurnResult:
    text: str
    requests: int
    stopped: str | None = None  # why the turn ended without a final answer


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSettings:
    """What a session's agent runs with, fixed when it is opened (``compose.setup`` makes it)."""

    recipe: Recipe
    tools: Mapping[str, Tool]
    models: Mapping[str, ModelSettings]
    model: str  # the entry a new session starts on; a resumed one follows its model.switch events
    workspace: Path
    shell_timeout: float = 30.0
    tool_timeout: float = 60.0
    shell_env: Mapping[str, str] | None = None
    max_steps: int = MAX_STEPS


class Agent:
    """One session's turns over ``log``: the agent feeds its own window the log, then every event
    it appends. ``check_model`` refuses a model its first request would fail on."""

    def __init__(
        self,
        *,
        log: SessionLog,
        settings: AgentSettings,
        backend_for: Callable[[ModelSettings], Backend],
        approve: Approver,
        display: Display | None = None,
        check_model: Callable[[ModelSettings], None] | None = None,
    ) -> None:
        self.log = log
        self.settings = settings
        self.window = Window()
        self.recorder = Recorder(log, self.window)
        self.backend_for = backend_for
        self.display: Display = display or Quiet()
        self.check_model = check_model
        self.requests = 0
        self.tool_context = tool_context(
            settings.recipe,
            workspace=settings.workspace,
            approve=approve,
            shell_timeout=settings.shell_timeout,
            recall=self.recall,
            tool_timeout=settings.tool_timeout,
            shell_env=settings.shell_env,
        )
        self.state = LoopState(model=settings.model)
        # A resumed session holds its events from where its window starts, not the whole log
        # (ADR 0114): one pass over those.
        self.first_seq, events = resumed_events(log)
        for event in events:
            self.window.feed(event)
            self.state.follow(event)

    @property
    def session_id(self) -> str:
        return str(self.log.id)

    @property
    def ctx(self) -> str:
        return self.state.ctx

    @property
    def model(self) -> ModelSettings:
        return self.settings.models[self.state.model]

    def append(self, kind: str, data: dict[str, Any], ctx: str | None = None) -> Event:
        event = self.recorder.append(kind, data, ctx or self.state.ctx)
        self.state.follow(event)
        return event

    def request(self, turn: TurnOptions, ctx: str | None = None) -> tuple[Event, Response]:
        ctx = ctx or self.state.ctx
        settings = self.model
        reasons, images = withheld(self.state.images, settings, self.log.attachments)
        build, req = self.recorder.request(
            ctx,
            settings.origin,
            turn=turn,
            withheld=reasons,
            model=settings.name,
            cache_ask=cache_ask(settings),
        )
        self.state.follow(req)
        self.requests += 1
        self.display.request(req)
        try:
            response = self.backend_for(settings).send(
                build.request,
                settings,
                session_key=session_key(self.session_id),
                on_delta=self.display.delta,
                images=images,
            )
        except (ProviderError, OriginError, ConfigError, EncodeError) as exc:
            redact_error(exc, self.log.known)  # shown and logged only redacted: it may echo the key
            # every failed send leaves its reason beside the llm.req it recorded
            self.append("note", {"text": f"request seq {req.seq} failed: {exc}"}, ctx=ctx)
            raise
        if not all(c.id for c in response.calls):  # ids the server did not give, minted from the log
            response = dataclasses.replace(response, calls=mint_call_ids(response.calls, req.seq))
        logged, left_out = reply.for_log(response, self.log.known)
        for note in left_out:
            self.display.notice(note)
        event = self.append("llm.resp", {"req": req.seq, "response": response_to_json(logged)}, ctx=ctx)
        self.display.response(event, logged)
        return event, logged

    # -- turns -----------------------------------------------------------------------------------

    def settle(self) -> int:
        """After an interruption (a crash, Ctrl-C, a failed request mid-batch): close the sub-agent
        contexts left open and answer every call left without a result, so the conversation is whole
        again. Returns how many events it appended."""
        due = self.state.interrupted()
        for kind, data, ctx in due:
            self.append(kind, data, ctx=ctx)
        return len(due)

    def user_turn(self, text: str, images: Sequence[Path] = (), *, plan_first: bool = False) -> TurnResult:
        """The person's message, then model requests and tool calls until a reply without calls."""
        strategies.compact_if_due(self)
        strategies.hygiene(self)
        refs = [image_ref(self.log.attachments, p, model_host(self.model)) for p in images]
        data: dict[str, Any] = {"text": text}
        if refs:
            data["images"] = refs
        self.append("user.msg", data)
        if plan_first:
            strategies.plan(self)
        return self.run(self.state.ctx)

    def run(self, ctx: str, offered: Sequence[str] | None = None) -> TurnResult:
        start = self.requests
        previous: ToolCall | None = None
        for _ in range(self.settings.max_steps):
            turn = TurnOptions(offered_tools=tuple(offered)) if offered is not None else TurnOptions()
            _, response = self.request(turn, ctx)
            if not response.calls:
                if not response.text.strip():
                    message = (
                        f"the model ({self.model.name}) answered with no text and no tool calls; "
                        "the turn ends here (its reply is in the log)"
                    )
                    self.append("note", {"text": message}, ctx=ctx)
                    self.display.notice(message)
                    return TurnResult(text="", requests=self.requests - start, stopped="empty reply")
                return TurnResult(text=response.text, requests=self.requests - start)
            for call in response.calls:
                if self._repeats(call, previous):
                    self.repeated(ctx, call)
                else:
                    self.answer(ctx, call, offered)
                previous = call
        message = f"stopped after {self.settings.max_steps} model requests in one turn; say how to go on"
        self.append("note", {"text": message}, ctx=ctx)
        self.display.notice(message)
        return TurnResult(text="", requests=self.requests - start, stopped="step limit")

    def _repeats(self, call: ToolCall, previous: ToolCall | None) -> bool:
        """The same look (a tool that changes nothing) with the same arguments as the call just
        answered: a small model's loop. Its result is already in the conversation."""
        tool = self.settings.tools.get(call.name)
        if previous is None or tool is None or tool.mutating or call.name == SUB_AGENT:
            return False
        if call.name != previous.name:
            return False
        try:
            return bool(json.loads(call.arguments) == json.loads(previous.arguments))
        except json.JSONDecodeError:
            return call.arguments == previous.arguments

    def repeated(self, ctx: str, call: ToolCall) -> Outcome:
        """Answer a repeated call without running it again: what the model needs is already above."""
        self.display.tool_call(ctx, call)
        outcome = Outcome(
            text=f"{call.name} was just called with these same arguments and its result is above; "
            "answer from it, or make a different call",
            error=True,
        )
        self.append("tool.result", result_data(call, outcome), ctx=ctx)
        self.display.tool_result(ctx, call, outcome)
        return outcome

    def answer(self, ctx: str, call: ToolCall, offered: Sequence[str] | None) -> Outcome:
        self.display.tool_call(ctx, call)
        if (
            call.name == SUB_AGENT
            and SUB_AGENT in self.settings.tools
            and (offered is None or SUB_AGENT in offered)
        ):
            outcome = strategies.sub_agent(self, ctx, call)
        else:
            outcome = run_call(call, self.settings.tools, self.tool_context, offered)
        if outcome.plan is not None:
            self.append("gate.plan", {"text": outcome.plan}, ctx=ctx)
        self.append("tool.result", result_data(call, outcome), ctx=ctx)
        self.display.tool_result(ctx, call, outcome)
        return outcome

    def recall(self, seq: int) -> str:
        return recall_text(self.log, seq)
