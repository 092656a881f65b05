"""The turn loop: request -> streamed reply -> tool calls -> results, every step logged.

Each request is built by the window from the log and its ``llm.req`` recorded with the digest
before it is sent; the reply is logged as ``llm.resp``, each call's answer as ``tool.result``. A
tool never raises into the loop. A provider failure is logged as a note and raised: ``nodwyn
resume`` continues from the log. The strategies are functions in ``agent.strategies``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from nodwyn.agent import ends, reply, strategies, unfinished
from nodwyn.agent.attach import image_ref, model_host, tool_images, withheld
from nodwyn.agent.dispatch import recall_text, result_payload, tool_context
from nodwyn.agent.fits import check_task
from nodwyn.agent.ports import Display, Quiet
from nodwyn.agent.settings import AgentSettings, TurnResult, cache_ask
from nodwyn.agent.state import rebuild
from nodwyn.agent.tools import Approver, Outcome
from nodwyn.dialects import session_key
from nodwyn.errors import ConfigError, EncodeError, OriginError, ProviderError, TooLargeError
from nodwyn.log import SessionLog, redact_error
from nodwyn.record import Recorder
from nodwyn.transport import Backend
from nodwyn.values.content import ToolCall, mint_call_ids
from nodwyn.values.events import Event, GatePlan, LlmResp, Note, Payload, UserMsg
from nodwyn.values.model import ModelEntry
from nodwyn.values.request import Response
from nodwyn.window import Build, TurnOptions, Window


class Agent:
    """One session's turns over ``log``, from where its window starts (ADR 0114). ``check_model``
    refuses a model its first request would fail on."""

    def __init__(
        self,
        *,
        log: SessionLog,
        settings: AgentSettings,
        backend_for: Callable[[ModelEntry], Backend],
        approve: Approver,
        display: Display | None = None,
        check_model: Callable[[ModelEntry], None] | None = None,
        notes: Callable[[], list[str]] | None = None,
    ) -> None:
        self.log, self.settings, self.backend_for, self.check_model = log, settings, backend_for, check_model
        self.notes = notes  # lines that arrived between steps (an MCP server's list_changed): logged, shown
        self.display: Display = display or Quiet()
        self.window = Window()
        self.recorder = Recorder(log, self.window)
        self.requests = 0
        self.last_build: Build | None = None  # the latest request as the window built it (faces show it)
        self.tool_context = tool_context(settings, approve, partial(recall_text, log), log.known)
        self.first_seq, self.state = rebuild(log, self.window, settings.model)

    @property
    def session_id(self) -> str:
        return str(self.log.id)

    @property
    def model(self) -> ModelEntry:
        return self.settings.models[self.state.model]

    def append(self, payload: Payload, ctx: str | None = None) -> Event:
        event = self.recorder.append(payload, ctx or self.state.ctx)
        self.state.follow(event)
        return event

    def request(self, turn: TurnOptions, ctx: str | None = None) -> tuple[Event, Response]:
        """One model request in ``ctx``: recorded, sent, its reply logged."""
        ctx, settings = ctx or self.state.ctx, self.model
        strategies.arrived_notes(self, ctx)
        reasons, images = withheld(self.state.images, settings, self.log.attachments)
        ask, size, origin = cache_ask(settings), settings.context_size, settings.origin
        try:  # a request that does not fit the context is refused unrecorded, so never sent
            build, req = self.recorder.request(
                ctx, origin, turn=turn, withheld=reasons, model=settings.name, cache_ask=ask, context=size
            )
        except TooLargeError as exc:
            self.append(Note(text=f"request refused before sending: {exc}"), ctx=ctx)
            raise
        self.last_build = build
        self.state.follow(req)
        self.requests += 1
        self.display.request(req)
        try:
            key, on_delta = session_key(self.session_id), self.display.delta
            against = self.state.compare_with(ctx, settings, self.settings.models)
            response = self.backend_for(settings).send(
                build.request,
                settings,
                session_key=key,
                on_delta=on_delta,
                images=images,
                diagnose_against=against,
            )
        except (ProviderError, OriginError, ConfigError, EncodeError) as exc:
            redact_error(exc, self.log.known)  # it may echo the key: shown and logged only redacted
            self.append(Note(text=f"request seq {req.seq} failed: {exc}"), ctx=ctx)
            raise
        if not all(c.id for c in response.calls):  # ids the server did not give, minted from the log
            response = dataclasses.replace(response, calls=mint_call_ids(response.calls, req.seq))
        logged, left_out = reply.for_log(response, self.log.known)
        for note in left_out:
            self.display.notice(note)
        event = self.append(LlmResp(req=req.seq, response=logged), ctx=ctx)
        self.display.response(event, logged)
        return event, logged

    def settle(self) -> int:
        """After an interruption, close the sub-agent contexts left open and answer every call left
        without a result, so the conversation is whole again. Returns how many events it appended."""
        due = self.state.interrupted()
        for payload, ctx in due:
            self.append(payload, ctx=ctx)
        return len(due)

    def user_turn(self, text: str, images: Sequence[Path] = (), *, plan_first: bool = False) -> TurnResult:
        """The person's message (refused unrecorded if it cannot fit: ADR 0300), then model requests
        and tool calls until a reply without calls."""
        text = strategies.with_named(self, text, first=not self.state.asked_with)  # the session's first
        check_task(self.settings.recipe, self.model, text)
        strategies.compact_if_due(self)
        strategies.hygiene(self)
        refs = tuple(image_ref(self.log.attachments, p, model_host(self.model)) for p in images)
        self.append(UserMsg(text=text, images=refs or None))
        if plan_first:
            strategies.plan(self)
        return self.run(self.state.ctx)

    def run(self, ctx: str, offered: Sequence[str] | None = None) -> TurnResult:
        """Requests in ``ctx`` until a reply without calls, or the step limit."""
        start, steps, nudged = self.requests, self.settings.max_steps, 0
        turn, previous = TurnOptions(offered_tools=None if offered is None else tuple(offered)), None
        for step in range(steps):
            _, response = self.request(turn, ctx)
            for n, call in enumerate(response.calls):
                self.run_tool(ctx, call, offered, previous, cut_at=ends.cut_call(response, n))
                previous = call
            end = None if response.calls else ends.of_reply(response, self.model.name)
            left = min(steps - step - 1, unfinished.NUDGES - nudged)  # steps and asks to go
            if unfinished.nudged(self, ctx, response, offered, previous, left):
                nudged += 1  # asked to go on instead of ending the turn (ADR 0445)
                continue
            if not response.calls and end is None:
                return TurnResult(text=response.text, requests=self.requests - start)
            if end is not None:
                return self.stop(ctx, end, start)
        return self.stop(ctx, ends.step_limit(steps), start)

    def stop(self, ctx: str, end: ends.End, start: int) -> TurnResult:
        """A turn that ends without a whole answer: why, in the log and on the display."""
        self.append(Note(text=end.why), ctx=ctx)
        self.display.notice(end.why)
        n = self.requests - start
        return TurnResult(text=end.text, requests=n, stopped=end.stopped, why=end.why, cut_at=end.cut_at)

    def run_tool(
        self,
        ctx: str,
        call: ToolCall,
        offered: Sequence[str] | None,
        previous: ToolCall | None,
        *,
        cut_at: int | None = None,
    ) -> Outcome:
        """One tool call answered (a repeated look, a sub-agent or a tool), its result logged. A call
        cut at the output cap (``cut_at``: the reply's output tokens) is not run."""
        self.display.tool_call(ctx, call)
        outcome = tool_images(strategies.outcome_for(self, ctx, call, offered, previous, cut_at), self.model)
        if outcome.plan is not None:
            self.append(GatePlan(text=outcome.plan), ctx=ctx)
        self.append(result_payload(call, outcome), ctx=ctx)
        self.display.tool_result(ctx, call, outcome)
        return outcome
