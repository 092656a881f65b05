"""A session builder: scripted events written through the one recording path.

Every event goes through ``record.Recorder`` (on a real ``SessionLog`` when given a store, else on
a ``MemoryLog``), so every ``llm.req`` holds what an agent session's holds and replays for real.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from nodwyn.log import SessionLog, Store
from nodwyn.record import EventLog, Recorder, resume_session, resumed_events, start_session
from nodwyn.testing.memory import MemoryLog
from nodwyn.transport import Backend
from nodwyn.values import codec
from nodwyn.values.canonical import canonical_bytes
from nodwyn.values.content import Origin, ThinkingBlock, ToolCall
from nodwyn.values.events import (
    MAIN_CTX,
    CtxClose,
    CtxOpen,
    CtxWiden,
    Event,
    GatePlan,
    ImageRef,
    LineRange,
    LlmResp,
    ModelSwitch,
    Payload,
    ResultFold,
    SessionResume,
    SessionStart,
    SummaryAdd,
    SummaryRevoke,
    ToolResult,
    UserMsg,
)
from nodwyn.values.model import ModelEntry
from nodwyn.values.recipe import DEFAULT_VERSION, Recipe, WindowLimits
from nodwyn.values.request import Response, ToolSpec, Usage
from nodwyn.window import Build, Start, TurnOptions, Window, source_digest

ORIGIN = Origin(model="test-model", url="http://127.0.0.1:9/v1", credential="TEST_KEY")
TOOLS = (
    ToolSpec(
        name="fs-read",
        description="Read a file.",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
    ToolSpec(
        name="shell",
        description="Run a command.",
        parameters={"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
    ),
)
LIMITS = WindowLimits(
    high_water=60_000, low_water=30_000, max_result_tokens=3_072, output_reserve=8_192, ceiling=80_000
)


USAGE = Usage(prompt_tokens=100, cached_tokens=0, output_tokens=10)


def recipe(
    version: int = DEFAULT_VERSION,
    *,
    system: str = "You are a careful coding agent.",
    tools: Sequence[ToolSpec] = TOOLS,
    limits: WindowLimits = LIMITS,
    context_size: int = 98_304,
    **extra: Any,
) -> Recipe:
    """A recipe for a test session. ``extra`` takes a ``WindowLimits`` field (``high_water=...``,
    applied to ``limits``) or any other ``Recipe`` field (``task_header=...``)."""
    marks = {f.name: extra.pop(f.name) for f in fields(WindowLimits) if f.name in extra}
    return Recipe(
        version=version,
        system=system,
        tools=tuple(tools),
        limits=replace(limits, **marks),
        context_size=context_size,
        **extra,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Sent:
    """One recorded request: its ``llm.req``, what the window built, and the bytes sent."""

    event: Event
    build: Build
    origin: Origin
    turn: TurnOptions
    withheld: Mapping[str, str]
    start: Start  # the window's start point when it built the request

    @property
    def seq(self) -> int:
        return self.event.seq

    @property
    def canonical(self) -> bytes:
        return self.build.canonical


class SessionBuilder:
    """A session written event by event: ``SessionBuilder(recipe(), store=store)`` records on disk
    (``start_session``, redacted as a real session), ``SessionBuilder(recipe())`` in memory.

    ``request`` records through ``Recorder.request`` and keeps what it built: ``sent[seq]`` (the
    canonical bytes), ``builds[seq]`` and ``requests`` (a ``Sent`` each, in order). ``recipe=None``
    starts empty (call ``start``); ``window`` is the window to record with (default a new one);
    ``log`` a ``SessionLog`` the caller opened for writing, instead of a store (its events, if
    any, are fed to the window first; ``resume`` then records ``session.resume`` on it).
    """

    def __init__(
        self,
        recipe: Recipe | None = None,
        *,
        store: Store | None = None,
        log: SessionLog | None = None,
        model: str = "test",
        workspace: str | None = "/work/space",
        origin: Origin = ORIGIN,
        window: Window | None = None,
    ) -> None:
        self.store = store
        self.model = model
        self.origin = origin
        self.workspace = workspace
        self.sent: dict[int, bytes] = {}
        self.builds: dict[int, Build] = {}
        self.requests: list[Sent] = []
        self._calls = 0
        self._memory = MemoryLog() if store is None and log is None else None
        self._log: SessionLog | None = log
        self._window = window  # the first recorder's window (e.g. one with its own tuning)
        target: EventLog | None = self._memory if self._memory is not None else log
        self.recorder = None if target is None else Recorder(target, window)
        if log is not None and self.recorder is not None:
            self.recorder.feed(log.read())  # a log reopened to go on: the window holds its events
        self.id = "memory" if log is None else log.id
        if recipe is not None:
            self.start(recipe)

    # -- lifetime ------------------------------------------------------------------------------

    def start(self, recipe: Recipe) -> Event:
        """The session's first event: ``session.start`` with ``recipe``."""
        if self.store is None:  # in memory, or a log the caller opened (empty, for writing)
            return self.add(SessionStart(recipe=recipe, model=self.model))
        self._log = start_session(self.store, recipe, self.model, self.workspace)
        self.id = self._log.id
        self.recorder = Recorder(self._log, self._window)
        self.recorder.feed(self._log.read())
        return next(self._log.read(1, 1))

    def resume(self, recipe: Recipe, model: str | None = None) -> Event:
        """``session.resume`` under ``recipe``. On disk: the log is closed, reopened for writing as
        ``resume_session`` does, and the window rebuilt from the recorded start point."""
        if model is not None:
            self.model = model
        if self.store is None:
            return self.add(SessionResume(recipe=recipe, model=self.model))
        self.close()
        self._log = resume_session(self.store, self.id, recipe, self.model)
        self.recorder = Recorder(self._log)
        _, events = resumed_events(self._log)
        self.recorder.feed(events)
        return next(self._log.read(self._log.last_seq))

    def close(self) -> None:
        """Release the log's lock (on disk); ``resume`` opens it again."""
        if self._log is not None:
            self._log.close()
            self._log = None

    @property
    def log(self) -> SessionLog | MemoryLog:
        if self._memory is not None:
            return self._memory
        assert self._log is not None, "the session is closed; resume it first"
        return self._log

    @property
    def window(self) -> Window:
        return self._recorder().window

    @property
    def events(self) -> list[Event]:
        """Every event recorded so far (read back from disk for a session on disk)."""
        if self._memory is not None:
            return list(self._memory.events)
        if self._log is not None:
            return list(self._log.read())
        assert self.store is not None
        with self.store.open(self.id) as log:
            return list(log.read())

    def _recorder(self) -> Recorder:
        assert self.recorder is not None and (self._memory is not None or self._log is not None), (
            "the session is not open: start or resume it first"
        )
        return self.recorder

    # -- events --------------------------------------------------------------------------------

    def add(self, payload: Payload, ctx: str = MAIN_CTX) -> Event:
        """Any event, appended (checked as every append is) and fed to the window."""
        return self._recorder().append(payload, ctx)

    def add_raw(self, kind: str, data: dict[str, Any], ctx: str = MAIN_CTX) -> Event:
        """An event written as given, its payload unchecked (a test forging a damaged or a later
        release's event), then fed to the window, which may refuse it."""
        event = self.log.append_raw(kind, data, ctx)
        self.window.feed(event)
        return event

    def user(
        self, text: str, ctx: str = MAIN_CTX, images: Sequence[ImageRef | Mapping[str, Any]] | None = None
    ) -> Event:
        """A person's message; ``images``: ``ImageRef``s or their payload objects."""
        refs = tuple(
            ref if isinstance(ref, ImageRef) else ImageRef.from_data(dict(ref), f"images[{i}]")
            for i, ref in enumerate(images or ())
        )
        return self.add(UserMsg(text=text, images=refs or None), ctx)

    def request(
        self,
        ctx: str = MAIN_CTX,
        origin: Origin | None = None,
        turn: TurnOptions | None = None,
        withheld: Mapping[str, str] | None = None,
        *,
        model: str | None = None,
        cache_ask: str | None = None,
    ) -> Event:
        """The next request of ``ctx``, recorded as the agent records it; returns its ``llm.req``.
        ``model``: the model entry it records (default the builder's ``model``)."""
        rec = self._recorder()
        origin = origin or self.origin
        turn = turn or TurnOptions()
        held = dict(withheld or {})
        start = rec.window.start
        build, event = rec.request(
            ctx, origin, turn=turn, withheld=held, model=model or self.model, cache_ask=cache_ask
        )
        sent = canonical_bytes(codec.request_to_json(build.request))
        assert build.canonical == sent, (
            "the window's incremental bytes differ from the request's canonical form"
        )
        self.sent[event.seq] = sent
        self.builds[event.seq] = build
        self.requests.append(
            Sent(event=event, build=build, origin=origin, turn=turn, withheld=held, start=start)
        )
        return event

    def exchange(
        self,
        backend: Backend,
        settings: ModelEntry,
        ctx: str = MAIN_CTX,
        turn: TurnOptions | None = None,
        *,
        session_key: str | None = None,
        cache_ask: str | None = None,
    ) -> tuple[Event, Response]:
        """One request to a real backend (an ``HttpBackend`` at a fake, a ``ScriptedBackend``):
        recorded, sent, and its reply logged as the agent logs it. Returns the ``llm.req`` and the
        reply. ``cache_ask``: what the request records it asked of the cache (the agent records
        ``agent.settings.cache_ask(settings)``; None records none)."""
        req = self.request(ctx, settings.origin, turn, model=settings.name, cache_ask=cache_ask)
        response = backend.send(self.builds[req.seq].request, settings, session_key=session_key)
        self.add(LlmResp(req=req.seq, response=response), ctx)
        return req, response

    def reply(
        self,
        req: Event,
        text: str = "",
        *,
        thinking: str = "",
        calls: Sequence[tuple[str, str] | ToolCall] = (),
        blocks: Sequence[ThinkingBlock] = (),
        usage: Usage = USAGE,
        model: str | None = "test-model",
        ctx: str | None = None,
    ) -> tuple[Event, list[ToolCall]]:
        """The reply to ``req`` (in ``req``'s context unless ``ctx``); ``calls`` are ``ToolCall``s or
        (name, JSON arguments), given ids ``call_1``, ``call_2``, ... Returns the ``llm.resp`` and
        the calls."""
        made: list[ToolCall] = []
        for call in calls:
            if isinstance(call, ToolCall):
                made.append(call)
                continue
            self._calls += 1
            made.append(ToolCall(id=f"call_{self._calls}", name=call[0], arguments=call[1]))
        response = Response(
            text=text,
            thinking=thinking,
            calls=tuple(made),
            blocks=tuple(blocks),
            usage=usage,
            finish="tool_calls" if made else "stop",
            model=model,
        )
        event = self.add(LlmResp(req=req.seq, response=response), ctx or req.ctx)
        return event, made

    def result(
        self,
        call: ToolCall,
        text: str,
        ctx: str = MAIN_CTX,
        error: bool = False,
        rng: Mapping[str, int] | None = None,
    ) -> Event:
        """A tool call's result; ``rng``: ``{"start", "end", "total"}`` of a ranged read."""
        lines = None if rng is None else LineRange(start=rng["start"], end=rng["end"], total=rng["total"])
        return self.add(ToolResult(call_id=call.id, name=call.name, text=text, error=error, range=lines), ctx)

    def turn(
        self,
        ask: str,
        steps: Sequence[Sequence[tuple[str, str, str]]] = (),
        answer: str = "done",
        ctx: str = MAIN_CTX,
        thinking: str = "",
    ) -> Event:
        """A person's message, one request per step of tool calls (name, arguments, result), then
        the answer. Returns the final reply."""
        self.user(ask, ctx)
        for step in steps:
            req = self.request(ctx)
            _, calls = self.reply(req, thinking=thinking, calls=[(n, a) for n, a, _ in step])
            for call, (_, _, out) in zip(calls, step, strict=True):
                self.result(call, out, ctx)
        event, _ = self.reply(self.request(ctx), answer, thinking=thinking)
        return event

    def switch(self, model: str, ctx: str = MAIN_CTX) -> Event:
        """``model.switch``; later requests record ``model`` as their entry."""
        self.model = model
        return self.add(ModelSwitch(model=model), ctx)

    def plan(self, text: str, ctx: str = MAIN_CTX) -> Event:
        return self.add(GatePlan(text=text), ctx)

    def fold(self, target: int, text: str, ctx: str = MAIN_CTX) -> Event:
        return self.add(ResultFold(target=target, text=text), ctx)

    def open_ctx(self, cid: str, kind: str, ctx: str = MAIN_CTX, **fields: Any) -> Event:
        """``ctx.open`` of a narrowing (``kind="narrow"``) or a sub-agent (``kind="sub"``);
        ``fields``: the payload's other fields as the log holds them (``offered_tools=[...]``)."""
        return self.add(CtxOpen.from_data({"id": cid, "kind": kind, **fields}, "open_ctx"), ctx)

    def close_ctx(self, cid: str, ctx: str, result: str | None = None) -> Event:
        return self.add(CtxClose(id=cid, result=result), ctx)

    def widen_ctx(self, cid: str, ctx: str) -> Event:
        return self.add(CtxWiden(id=cid), ctx)

    def summary(
        self, first: int, last: int, text: str, ctx: str = MAIN_CTX, digest: str | None = None
    ) -> Event:
        """``summary.add`` of seqs ``first``..``last``, with the digest of those events unless given."""
        if digest is None:
            digest = source_digest(e for e in self.events if first <= e.seq <= last)
        return self.add(SummaryAdd(first=first, last=last, text=text, source_digest=digest), ctx)

    def revoke(self, summary: int, ctx: str = MAIN_CTX) -> Event:
        return self.add(SummaryRevoke(summary=summary), ctx)

    def feed(self, events: Iterable[Event]) -> None:
        """Events already in the log into the window (rarely needed: the builder feeds its own)."""
        self._recorder().feed(events)
