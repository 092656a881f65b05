"""The turn loop: request -> streamed reply -> tool calls -> results, every step logged.

Every request is built by the window from the log (``agent.session.send_request`` records its
``llm.req`` with the digest before it is sent); the reply is logged as ``llm.resp``, each call's
answer as ``tool.result``. A tool never raises into the loop: bad input comes back to the model as
an error result. A provider failure is logged as a note and raised: the session stops, and
``nodwyn resume`` continues it from the log, which has lost nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from nodwyn.agent import reply, strategies
from nodwyn.agent.attach import image_ref
from nodwyn.agent.session import send_request
from nodwyn.agent.strategies import ResultRecord
from nodwyn.agent.tools import SUB_AGENT, Approver, Outcome, Tool, ToolContext, run_call
from nodwyn.dialects.session_key import session_key
from nodwyn.errors import CorruptLogError, NotFoundError, ProviderError, ToolError
from nodwyn.log import SessionLog
from nodwyn.values.codec import response_to_json
from nodwyn.values.content import ToolCall
from nodwyn.values.events import MAIN_CTX, Event
from nodwyn.values.model import ModelSettings
from nodwyn.values.recipe import Flag, Recipe
from nodwyn.values.request import Request, Response
from nodwyn.window import TurnOptions, Window

MAX_STEPS = 24
READ_MARGIN = 0.85  # a ranged read leaves room for JSON escaping and its header
# A turn starts with a compaction once the last request was past high water (trimming could not
# shrink it) and past this share of the ceiling.
AUTO_COMPACT = 0.9


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
    """What the person sees. The CLI prints; tests record."""

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


def model_host(settings: ModelSettings) -> str:
    """The host an attachment confirmed for this model goes to ("local" for the in-process model)."""
    if settings.api == "local":
        return "local"
    if settings.server:
        return settings.server
    return (urlsplit(settings.base_url or "").hostname or "").lower()


@dataclass(slots=True)
class TurnResult:
    text: str
    requests: int
    stopped: str | None = None  # why the turn ended without a final answer


@dataclass(slots=True)
class _State:
    """What the loop tracks from the log (rebuilt from it on resume)."""

    ctx: str = MAIN_CTX
    model: str = ""
    results: list[ResultRecord] = field(default_factory=list)
    folded: set[int] = field(default_factory=set)
    images: dict[str, dict[str, Any]] = field(default_factory=dict)
    contexts: int = 0
    last_estimate: int = 0


class Agent:
    def __init__(
        self,
        *,
        log: SessionLog,
        window: Window,
        recipe: Recipe,
        tools: Mapping[str, Tool],
        models: Mapping[str, ModelSettings],
        model: str,
        backend_for: Callable[[ModelSettings], Backend],
        workspace: Path,
        approve: Approver,
        shell_timeout: float = 30.0,
        display: Display | None = None,
        max_steps: int = MAX_STEPS,
    ) -> None:
        self.log = log
        self.window = window
        self.recipe = recipe
        self.tools = dict(tools)
        self.models = models
        self.backend_for = backend_for
        self.workspace = workspace
        self.approve = approve
        self.shell_timeout = shell_timeout
        self.display: Display = display or Quiet()
        self.max_steps = max_steps
        self.state = _State(model=model)
        self.requests = 0
        self._calls: dict[str, ToolCall] = {}
        self._rebuild_state()

    # -- log -------------------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return str(self.log.id)

    @property
    def ctx(self) -> str:
        return self.state.ctx

    @property
    def model(self) -> ModelSettings:
        return self.models[self.state.model]

    def append(self, kind: str, data: dict[str, Any], ctx: str | None = None) -> Event:
        event: Event = self.log.append(kind, data, ctx=ctx or self.state.ctx)
        self.window.feed(event)
        self._track(event)
        return event

    def _rebuild_state(self) -> None:
        """Follow the log so far (a resumed session): contexts, results, folds, images, model."""
        for event in self.log.read(1):
            self._track(event)

    def _track(self, event: Event) -> None:
        s, d = self.state, event.data
        if event.kind == "llm.resp":
            for c in d.get("response", {}).get("calls", []):
                self._calls[c["id"]] = ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"])
        elif event.kind == "tool.result":
            s.results.append(_record(event, self._calls.get(d["call_id"])))
        elif event.kind == "result.fold":
            s.folded.add(d["target"])
        elif event.kind == "user.msg":
            for ref in d.get("images", []):
                s.images[ref["digest"]] = ref
        elif event.kind == "model.switch":
            s.model = d["model"]
        elif event.kind == "ctx.open":
            s.contexts += 1
            if d.get("kind") == "narrow":
                s.ctx = d["id"]
                s.last_estimate = 0
        elif event.kind in ("session.start", "session.resume"):
            s.model = d.get("model", s.model)
        elif event.kind == "llm.req" and event.ctx == s.ctx:
            s.last_estimate = int(d.get("estimate", 0))

    # -- requests --------------------------------------------------------------------------------

    def withheld(self, settings: ModelSettings) -> tuple[dict[str, str], dict[str, bytes]]:
        """Each attached image: sent (its bytes) or withheld with the reason."""
        withheld: dict[str, str] = {}
        images: dict[str, bytes] = {}
        host = model_host(settings)
        for digest, ref in self.state.images.items():
            if not settings.takes_images:
                withheld[digest] = f"model {settings.name} takes no images"
                continue
            confirmed = ref.get("host")
            if confirmed is not None and confirmed != host:
                withheld[digest] = f"the image was confirmed for {confirmed}, not {host}"
                continue
            try:
                images[digest] = self.log.attachments.get(digest)  # checks the digest again
            except NotFoundError:
                withheld[digest] = "the image is missing from the session's attachment store"
            except (CorruptLogError, OSError):
                withheld[digest] = "the stored image no longer matches its digest"
        return withheld, images

    def request(self, turn: TurnOptions, ctx: str | None = None) -> tuple[Event, Response]:
        ctx = ctx or self.state.ctx
        settings = self.model
        withheld, images = self.withheld(settings)
        build, req = send_request(self.log, self.window, ctx, settings.origin, turn, withheld, settings.name)
        self._track(req)
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
        except ProviderError as exc:
            self.append("note", {"text": f"request seq {req.seq} failed: {exc}"}, ctx=ctx)
            raise
        logged = reply.for_log(response)
        for note in logged.notes[len(response.notes) :]:
            self.display.notice(note)
        response = logged
        event = self.append("llm.resp", {"req": req.seq, "response": response_to_json(response)}, ctx=ctx)
        self.display.response(event, response)
        return event, response

    # -- turns -----------------------------------------------------------------------------------

    def settle(self) -> int:
        """After an interruption (a crash, Ctrl-C, a failed request mid-batch): close the sub-agent
        contexts left open and answer every call left without a result, so the conversation is whole
        again. Returns how many events it appended."""
        opened: dict[str, Event] = {}
        pending: dict[str, dict[str, ToolCall]] = {}
        for event in self.log.read(1):
            d = event.data
            if event.kind == "ctx.open" and d.get("kind") == "sub":
                opened[d["id"]] = event
            elif event.kind == "ctx.close":
                opened.pop(d["id"], None)
            elif event.kind == "llm.resp":
                calls = d.get("response", {}).get("calls", [])
                pending[event.ctx] = {
                    c["id"]: ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"]) for c in calls
                }
            elif event.kind == "tool.result":
                pending.get(event.ctx, {}).pop(d["call_id"], None)
        appended = 0
        for sub_id, event in sorted(opened.items(), key=lambda kv: -kv[1].seq):
            self.append(
                "ctx.close", {"id": sub_id, "result": "(interrupted before it answered)"}, ctx=event.ctx
            )
            pending.pop(sub_id, None)
            appended += 1
        for ctx, calls in pending.items():
            if ctx != self.state.ctx:
                continue
            for call in calls.values():
                data = {
                    "call_id": call.id,
                    "name": call.name,
                    "text": "interrupted: the session stopped before this call was answered; "
                    "call it again if needed",
                    "error": True,
                }
                self.append("tool.result", data, ctx=ctx)
                appended += 1
        return appended

    def user_turn(self, text: str, images: Sequence[Path] = (), *, plan_first: bool = False) -> TurnResult:
        """The person's message, then model requests and tool calls until a reply without calls."""
        limits = self.recipe.limits
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
        for _ in range(self.max_steps):
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
        message = f"stopped after {self.max_steps} model requests in one turn; say how to go on"
        self.append("note", {"text": message}, ctx=ctx)
        self.display.notice(message)
        return TurnResult(text="", requests=self.requests - start, stopped="step limit")

    def answer(self, ctx: str, call: ToolCall, offered: Sequence[str] | None) -> Outcome:
        self.display.tool_call(ctx, call)
        if call.name == SUB_AGENT and (offered is None or SUB_AGENT in offered):
            outcome = self.sub_agent(ctx, call)
        else:
            outcome = run_call(call, self.tools, self._tool_context(), offered)
        if outcome.plan is not None:
            self.append("gate.plan", {"text": outcome.plan}, ctx=ctx)
        data: dict[str, Any] = {
            "call_id": call.id,
            "name": call.name,
            "text": outcome.text,
            "error": outcome.error,
        }
        if outcome.range is not None:
            data["range"] = dict(outcome.range)
        self.append("tool.result", data, ctx=ctx)
        self.display.tool_result(ctx, call, outcome)
        return outcome

    def _tool_context(self) -> ToolContext:
        cap = self.recipe.limits.max_result_tokens
        if Flag.WIDE_READS in self.recipe.policy:
            cap *= 2
        return ToolContext(
            workspace=self.workspace,
            read_budget_tokens=int(cap * READ_MARGIN),
            approve=self.approve,
            shell_timeout=self.shell_timeout,
            recall=self.recall,
        )

    def recall(self, seq: int) -> str:
        if not 1 <= seq <= self.log.last_seq:
            raise ToolError(f"recall: there is no seq {seq} (the log has 1-{self.log.last_seq})")
        event = next(iter(self.log.read(seq, seq)))
        d = event.data
        if event.kind == "tool.result":
            return str(d["text"])
        if event.kind == "llm.resp":
            return str(d["response"].get("text", ""))
        if event.kind in ("user.msg", "gate.plan", "note"):
            return str(d["text"])
        raise ToolError(f"recall: seq {seq} is a {event.kind} event, which has no text to bring back")

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
        try:
            args = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            return Outcome(text='sub-agent: arguments are not valid JSON; send {"task": ...}', error=True)
        task = args.get("task") if isinstance(args, dict) else None
        if not isinstance(task, str) or not task.strip():
            return Outcome(text='sub-agent: missing "task" (what the sub-agent should do)', error=True)
        wanted = args.get("tools", ["fs-read"])
        if not isinstance(wanted, list) or not all(isinstance(t, str) for t in wanted):
            return Outcome(text='sub-agent: "tools" must be a list of tool names', error=True)
        unknown = sorted(set(wanted) - set(self.tools) | ({SUB_AGENT} & set(wanted)))
        if unknown:
            return Outcome(
                text=f"sub-agent: cannot offer {', '.join(unknown)}; pick from the catalog", error=True
            )
        sub_id = f"sub-{self.state.contexts + 1}"
        offered = sorted(wanted)
        self.append(
            "ctx.open",
            {
                "id": sub_id,
                "kind": "sub",
                "system": strategies.SUB_AGENT_SYSTEM,
                "offered_tools": offered,
                "parent_call": call.id,
            },
            ctx=parent,
        )
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
        new = f"compact-{self.state.contexts + 1}"
        self.append(
            "ctx.open",
            {
                "id": new,
                "kind": "narrow",
                "system": strategies.note_system(note, self.recipe.system),
                "lasting": True,
            },
            ctx=parent,
        )
        self.append("user.msg", {"text": strategies.CONTINUE_ASK}, ctx=new)
        return note

    def hygiene(self, *, force: bool = False) -> list[int]:
        """Fold failed attempts and stale reads, at a turn boundary once the window is past low water
        (each fold moves the prefix, so they wait until the room is worth it)."""
        if not force and self.state.last_estimate < self.recipe.limits.low_water:
            return []
        folds = strategies.hygiene_folds(self.state.results, self.state.folded, self.state.ctx)
        for fold in folds:
            self.append("result.fold", {"target": fold.target, "text": fold.text})
        return [f.target for f in folds]

    def switch_model(self, name: str) -> ModelSettings:
        if name not in self.models:
            known = ", ".join(sorted(self.models))
            raise NotFoundError(
                f"model {name!r} is not configured (known: {known}); see `nodwyn models list`"
            )
        self.append("model.switch", {"model": name})
        return self.model


def _record(event: Event, call: ToolCall | None) -> ResultRecord:
    d = event.data
    path: str | None = None
    target: str | None = None
    whole = False
    if call is not None:
        try:
            args = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            args = {}
        if isinstance(args, dict) and isinstance(args.get("path"), str):
            path = args["path"].removeprefix("./") or "."
            whole = "lines" not in args
        if isinstance(args, dict):
            found = path if path is not None else args.get("command", args.get("pattern"))
            target = found if isinstance(found, str) else None
    text = str(d.get("text", ""))
    return ResultRecord(
        seq=event.seq,
        ctx=event.ctx,
        name=str(d.get("name", "")),
        path=path,
        target=target,
        whole=whole,
        error=bool(d.get("error")),
        first_line=text.strip().splitlines()[0] if text.strip() else "",
    )
