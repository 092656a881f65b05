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
from nodwyn.agent.tools.args import parse_arguments
from nodwyn.dialects.session_key import session_key
from nodwyn.errors import (
    ConfigError,
    EncodeError,
    NotFoundError,
    OriginError,
    ProviderError,
    ToolError,
    did_you_mean,
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
# A turn starts with a compaction once the last request was past high water (trimming could not
# shrink it) and past this share of the ceiling.
AUTO_COMPACT = 0.9


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
        limits = self.settings.recipe.limits
        if self.state.last_estimate > max(limits.high_water, AUTO_COMPACT * limits.ceiling):
            self.display.notice(
                f"the last request (~{self.state.last_estimate} tokens) came near the window's ceiling "
                f"({limits.ceiling}) and trimming cannot shrink it; compacting first"
            )
            self.compact()
        self.hygiene()
        refs = [image_ref(self.log.attachments, p, model_host(self.model)) for p in images]
        data: dict[str, Any] = {"text": text}
        if refs:
            data["images"] = refs
        self.append("user.msg", data)
        if plan_first:
            self.plan()
        return self.run(self.state.ctx)

    def run(self, ctx: str, offered: Sequence[str] | None = None) -> TurnResult:
        start = self.requests
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
                self.answer(ctx, call, offered)
        message = f"stopped after {self.settings.max_steps} model requests in one turn; say how to go on"
        self.append("note", {"text": message}, ctx=ctx)
        self.display.notice(message)
        return TurnResult(text="", requests=self.requests - start, stopped="step limit")

    def answer(self, ctx: str, call: ToolCall, offered: Sequence[str] | None) -> Outcome:
        self.display.tool_call(ctx, call)
        if (
            call.name == SUB_AGENT
            and SUB_AGENT in self.settings.tools
            and (offered is None or SUB_AGENT in offered)
        ):
            outcome = self.sub_agent(ctx, call)
        else:
            outcome = run_call(call, self.settings.tools, self.tool_context, offered)
        if outcome.plan is not None:
            self.append("gate.plan", {"text": outcome.plan}, ctx=ctx)
        self.append("tool.result", result_data(call, outcome), ctx=ctx)
        self.display.tool_result(ctx, call, outcome)
        return outcome

    def new_context(self, kind: str) -> str:
        """A context id no earlier context of the session has: named by the seq its ``ctx.open``
        gets. (Ids were numbered by the contexts opened before, which a session resumed from its
        start point does not read; an old log's ``KIND-N`` has N below the seq of its own open.)"""
        return f"{kind}-{self.log.last_seq + 1}"

    def recall(self, seq: int) -> str:
        return recall_text(self.log, seq)

    # -- strategies ------------------------------------------------------------------------------

    def plan(self) -> str:
        """A planner turn: the same conversation, no tools offered; its reply is recorded as the plan."""
        self.append("user.msg", {"text": strategies.PLANNER_ASK})
        _, response = self.request(TurnOptions(no_tools=True))
        plan = response.text.strip()
        if plan:
            self.append("gate.plan", {"text": plan})
        else:
            self.display.notice("the planner turn wrote no plan; going on without one")
        return plan

    def sub_agent(self, parent: str, call: ToolCall) -> Outcome:
        """A sub-agent in a context of its own, offered the tools the call names (fs-read by default);
        its final answer comes back to ``parent`` as the call's one result."""
        try:
            args = parse_arguments(self.settings.tools[SUB_AGENT].spec, call.arguments)
        except ToolError as exc:
            return Outcome(text=str(exc), error=True)
        task = args["task"]
        if not task.strip():
            return Outcome(text='sub-agent: "task" is empty; say what the sub-agent should do', error=True)
        wanted = args.get("tools", ["fs-read"])
        unknown = sorted(set(wanted) - set(self.settings.tools) | ({SUB_AGENT} & set(wanted)))
        if unknown:
            return Outcome(
                text=f"sub-agent: cannot offer {', '.join(unknown)}; pick from the catalog", error=True
            )
        sub_id = self.new_context("sub")
        offered = sorted(wanted)
        data = {
            "id": sub_id,
            "kind": "sub",
            "system": strategies.SUB_AGENT_SYSTEM,
            "offered_tools": offered,
            "parent_call": call.id,
        }
        self.append("ctx.open", data, ctx=parent)
        self.append("user.msg", {"text": task}, ctx=sub_id)
        result = self.run(sub_id, offered=offered)
        answer = result.text or f"(the sub-agent ended without an answer: {result.stopped})"
        self.append("ctx.close", {"id": sub_id, "result": answer}, ctx=parent)
        return Outcome(text=answer, error=not result.text)

    def compact(self) -> str:
        """Ask for a note (a headroom request, no tools), then narrow under a system prompt that
        starts from it. The old conversation stays in the log; later windows start at the note."""
        parent = self.state.ctx
        self.append("user.msg", {"text": strategies.NOTE_ASK}, ctx=parent)
        _, response = self.request(TurnOptions(no_tools=True, headroom=True), parent)
        note = response.text.strip() or "(the model wrote no note; the task continues from the log)"
        new = self.new_context("compact")
        system = strategies.note_system(note, self.settings.recipe.system)
        self.append("ctx.open", {"id": new, "kind": "narrow", "system": system, "lasting": True}, ctx=parent)
        self.append("user.msg", {"text": strategies.CONTINUE_ASK}, ctx=new)
        return note

    def hygiene(self, *, force: bool = False) -> list[int]:
        """Fold failed attempts and stale reads, at a turn boundary once the window is past low water
        (each fold moves the prefix, so they wait until the room is worth it)."""
        if not force and self.state.last_estimate < self.settings.recipe.limits.low_water:
            return []
        folds = strategies.hygiene_folds(self.state.results, self.state.folded, self.state.ctx)
        for fold in folds:
            self.append("result.fold", {"target": fold.target, "text": fold.text})
        return [f.target for f in folds]

    def switch_model(self, name: str) -> ModelSettings:
        """Switch to model entry ``name``, checked now (configured, its credential and extra at
        hand) rather than at the next request."""
        if name not in self.settings.models:
            raise NotFoundError(
                f"model {name!r} is not configured{did_you_mean(name, self.settings.models)} "
                f"(known: {', '.join(sorted(self.settings.models))}); see `nodwyn models list`"
            )
        if self.check_model is not None:
            self.check_model(self.settings.models[name])
        self.append("model.switch", {"model": name})
        return self.model
