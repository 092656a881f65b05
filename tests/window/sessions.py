"""A session simulator that writes events as the agent loop does, and hypothesis strategies of
random sessions built with it (tool batches, plans, folds, summaries, images, blocks, narrowings,
sub-agents, model switches, resumes). Every request is built by a live ``Window`` and its
``llm.req`` appended and fed back, exactly as the agent does.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from nodwyn import testing
from nodwyn.testing import MemoryLog, SessionBuilder
from nodwyn.values.content import BlockType, Origin, ThinkingBlock, ToolCall
from nodwyn.values.events import Event, LlmReq, ModelSwitch
from nodwyn.values.recipe import KNOWN_VERSIONS, Recipe, WindowLimits
from nodwyn.values.request import ToolSpec, Usage
from nodwyn.window import (
    Build,
    Start,
    TurnOptions,
    Window,
    build_window,
    recorded_turn,
    recorded_withheld,
)

LIMITS = WindowLimits(high_water=900, low_water=450, max_result_tokens=80, output_reserve=200, ceiling=1400)
SMALL = WindowLimits(high_water=600, low_water=300, max_result_tokens=60, output_reserve=120, ceiling=1000)
TOOLS = (
    ToolSpec(name="fs-read", description="Read a file.", parameters={"type": "object", "properties": {}}),
    ToolSpec(name="shell", description="Run a command.", parameters={"type": "object", "properties": {}}),
    ToolSpec(name="plan-write", description="Write the plan.", parameters={"type": "object"}),
    ToolSpec(name="spawn", description="Start a sub-agent.", parameters={"type": "object"}),
)
PLAIN = TurnOptions()
ORIGIN_A = Origin(model="model-a", server="alpha")
ORIGIN_B = Origin(model="model-b", url="http://127.0.0.1:9/v1", credential="KEY_B")


def recipe(version: int = 19, limits: WindowLimits = LIMITS, **kw: Any) -> Recipe:
    """The window tests' recipe: small limits, the four tools above."""
    kw.setdefault("system", "You are a careful agent.")
    kw.setdefault("tools", TOOLS)
    kw.setdefault("context_size", 4096)
    return testing.recipe(version, limits=limits, **kw)


@dataclass(slots=True)
class Built:
    seq: int  # the llm.req's seq
    ctx: str
    origin: Origin
    turn: TurnOptions
    withheld: dict[str, str]
    build: Build
    start: Start  # the window's start just before the build
    measure: int  # the estimate before any trim
    predicted: int | None  # what the trim's accounting predicted (None: no trim ran)


class Sim(SessionBuilder):
    """An in-memory ``SessionBuilder`` (every request recorded through the one recording path) with
    the window tests' probes: each build's estimate before trimming and the trim's prediction, and
    the events before a seq."""

    def __init__(
        self, window: Window | None = None, events: list[Event] | None = None, version: int = 19
    ) -> None:
        super().__init__(origin=ORIGIN_A, window=window)
        assert isinstance(self.log, MemoryLog)
        self.log.events.extend(events or ())  # earlier events, not fed: the test feeds them
        self.built: list[Built] = []  # each build with its probes, in order
        self.version = version

    def start(self, r: Recipe) -> Event:
        self.version = r.version
        return super().start(r)

    def resume(self, r: Recipe, model: str | None = None) -> Event:
        self.version = r.version
        return super().resume(r, model)

    def request(  # type: ignore[override]  # the simulator answers by context, not by event
        self,
        ctx: str = "main",
        origin: Origin = ORIGIN_A,
        turn: TurnOptions = PLAIN,
        withheld: Mapping[str, str] | None = None,
    ) -> Build:
        held = dict(withheld or {})
        super().request(ctx, origin, turn, held)
        sent = self.requests[-1]
        d = sent.build.decision
        self.built.append(
            Built(sent.seq, ctx, origin, turn, held, sent.build, sent.start, d.before, d.predicted)
        )
        return sent.build

    def reply(  # type: ignore[override]  # the simulator answers by context, not by event
        self,
        ctx: str = "main",
        text: str = "",
        thinking: str = "",
        calls: tuple[ToolCall, ...] = (),
        blocks: tuple[ThinkingBlock, ...] = (),
    ) -> Event:
        """The reply to the last event, a request of ``ctx``."""
        req = self.events[-1]
        event, _ = super().reply(
            req, text, thinking=thinking, calls=calls, blocks=blocks, usage=Usage(), ctx=ctx
        )
        return event

    def result(  # type: ignore[override]  # the simulator answers by context, not by event
        self,
        call_id: str,
        text: str,
        ctx: str = "main",
        name: str = "shell",
        error: bool = False,
        rng: tuple[int, int, int] | None = None,
    ) -> Event:
        r = None if rng is None else {"start": rng[0], "end": rng[1], "total": rng[2]}
        return super().result(ToolCall(id=call_id, name=name, arguments="{}"), text, ctx, error, r)

    def before(self, seq: int) -> list[Event]:
        return self.events[: seq - 1]

    def replayed(self, seq: int) -> Build:
        """The request the llm.req at ``seq`` recorded, rebuilt as replay does: from the events
        before it and what its record says (origin, turn options, withheld images)."""
        req = self.events[seq - 1]
        rec = LlmReq.from_data(req.data)
        return build_window(
            self.before(seq),
            req.ctx,
            origin=rec.origin,
            turn=recorded_turn(rec),
            withheld=recorded_withheld(rec),
        )


def block(origin: Origin, data: str, position: int = 0, kind: BlockType = "thinking") -> ThinkingBlock:
    return ThinkingBlock(type=kind, origin=origin, data=data, text="summary", position=position)


def lines(rnd: random.Random, n: int) -> str:
    return "".join(f"line {i} {'x' * rnd.randrange(0, 60)}\n" for i in range(n))


@dataclass(slots=True)
class _Ctx:
    id: str
    kind: str  # main | narrow | sub
    lasting: bool = False
    results: list[int] = field(default_factory=list)


class Driver:
    """Turns a script of (action, seed) pairs into a valid session."""

    def __init__(self, version: int) -> None:
        self.sim = Sim()
        self.sim.start(recipe(version))
        self.stack: list[_Ctx] = [_Ctx("main", "main")]
        self.origin = ORIGIN_A
        self.withheld: dict[str, str] = {}
        self.calls = 0
        self.opened = 0
        self.summaries: list[int] = []
        self.small = False  # whether the last resized switch went to the small context

    @property
    def ctx(self) -> _Ctx:
        return self.stack[-1]

    def run(self, script: list[tuple[int, int]]) -> Sim:
        self.sim.user("Fix the bug in the parser.", self.ctx.id)
        for action, seed in script:
            getattr(self, _ACTIONS[action % len(_ACTIONS)])(random.Random(seed))
        return self.sim

    # -- actions ---------------------------------------------------------------------------------

    def _call_id(self, rnd: random.Random) -> str:
        if self.calls and rnd.random() < 0.25:  # reuse an id of an earlier batch
            return f"call_{rnd.randrange(self.calls)}"
        self.calls += 1
        return f"call_{self.calls - 1}"

    def user(self, rnd: random.Random) -> None:
        self.sim.user("please " + "word " * rnd.randrange(2, 200), self.ctx.id)

    def tools(self, rnd: random.Random, turn: TurnOptions = PLAIN) -> None:
        ctx = self.ctx.id
        self.sim.request(ctx, self.origin, turn, self.withheld)
        n = rnd.randrange(1, 4)
        ids: list[str] = []
        while len(ids) < n:
            cid = self._call_id(rnd)
            if cid not in ids:
                ids.append(cid)
        names = [rnd.choice(["fs-read", "shell", "plan-write"]) for _ in ids]
        calls = tuple(ToolCall(id=i, name=nm, arguments='{"a": 1}') for i, nm in zip(ids, names, strict=True))
        blocks: tuple[ThinkingBlock, ...] = ()
        if rnd.random() < 0.5:
            blocks = tuple(
                block(self.origin, "sig" * rnd.randrange(1, 30), position=p)
                for p in range(rnd.randrange(1, n + 1))
            )
        thinking = "I think " * rnd.randrange(0, 20)
        self.sim.reply(
            ctx, text="On it. " * rnd.randrange(0, 10), thinking=thinking, calls=calls, blocks=blocks
        )
        order = list(range(n))
        rnd.shuffle(order)
        for k in order:
            if names[k] == "plan-write":
                self.sim.plan("1. read\n2. fix\n" + "step " * rnd.randrange(1, 20), ctx)
                if rnd.random() < 0.3:
                    self.sim.plan("1. rewritten plan", ctx)
            if names[k] == "fs-read" and rnd.random() < 0.5:
                first = rnd.randrange(1, 50)
                count = rnd.randrange(5, 120)
                text = f"[lines {first}-{first + count - 1} of 400]\n" + lines(rnd, count)
                ev = self.sim.result(ids[k], text, ctx, name="fs-read", rng=(first, first + count - 1, 400))
            else:
                ev = self.sim.result(
                    ids[k], lines(rnd, rnd.randrange(1, 80)), ctx, names[k], rnd.random() < 0.2
                )
            self.ctx.results.append(ev.seq)

    def text_turn(self, rnd: random.Random) -> None:
        self.sim.request(self.ctx.id, self.origin, TurnOptions(), self.withheld)
        blocks = (block(self.origin, "opaque" * rnd.randrange(1, 10), kind="reasoning_details"),)
        self.sim.reply(self.ctx.id, text="Here is what I found. " * rnd.randrange(1, 30), blocks=blocks)

    def special_turn(self, rnd: random.Random) -> None:
        kind = rnd.randrange(3)
        if kind == 0:
            turn = TurnOptions(no_tools=True)
        elif kind == 1:
            turn = TurnOptions(offered_tools=("fs-read",))
        else:
            turn = TurnOptions(headroom=True)
        if kind == 0:
            self.sim.request(self.ctx.id, self.origin, turn, self.withheld)
            self.sim.reply(self.ctx.id, text="A plan, without tools. " * rnd.randrange(1, 10))
        else:
            self.tools(rnd, turn)

    def plan(self, rnd: random.Random) -> None:
        self.sim.plan("plan: " + "do it " * rnd.randrange(1, 30), self.ctx.id)

    def fold(self, rnd: random.Random) -> None:
        if self.ctx.results:
            self.sim.fold(rnd.choice(self.ctx.results), "[folded: no longer needed]", self.ctx.id)

    def image(self, rnd: random.Random) -> None:
        images = []
        for k in range(rnd.randrange(1, 3)):
            digest = f"sha256:{rnd.randrange(16**8):08x}{k}"
            images.append(
                {
                    "digest": digest,
                    "media_type": "image/png",
                    "width": rnd.randrange(100, 3000),
                    "height": rnd.randrange(100, 3000),
                    "name": f"shot{k}.png",
                }
            )
            if rnd.random() < 0.3:
                self.withheld[digest] = "its copy in the attachment store is missing"
        self.sim.user("look at this", self.ctx.id, images)

    def switch(self, rnd: random.Random) -> None:
        self.origin = ORIGIN_B if self.origin == ORIGIN_A else ORIGIN_A
        switch = ModelSwitch(model=self.origin.model)
        if rnd.random() < 0.5:  # a switch to another context records the window resized (ADR 0300)
            self.small = not self.small
            limits, size = (SMALL, 2400) if self.small else (LIMITS, 4096)
            switch = ModelSwitch(
                model=self.origin.model, recipe=recipe(self.sim.version, limits=limits, context_size=size)
            )
        self.sim.add(switch, self.ctx.id)

    def narrow(self, rnd: random.Random) -> None:
        if len(self.stack) > 3:
            return
        self.opened += 1
        cid = f"n{self.opened}"
        lasting = rnd.random() < 0.4
        kw: dict[str, Any] = {"lasting": lasting}
        if rnd.random() < 0.7:
            kw["system"] = "You are compacting. Handover: " + "note " * rnd.randrange(1, 40)
        self.sim.open_ctx(cid, "narrow", self.ctx.id, **kw)
        self.stack.append(_Ctx(cid, "narrow", lasting))
        self.sim.user("continue from the handover", cid)

    def end(self, rnd: random.Random) -> None:
        c = self.ctx
        if c.kind != "narrow" or c.lasting:
            return
        self.stack.pop()
        if rnd.random() < 0.7:
            self.sim.widen_ctx(c.id, self.ctx.id)
            self.ctx.results.extend(c.results)
        else:
            self.sim.close_ctx(c.id, self.ctx.id, "narrowing done: " + "x" * rnd.randrange(0, 50))

    def sub(self, rnd: random.Random) -> None:
        parent = self.ctx.id
        self.sim.request(parent, self.origin, TurnOptions(), self.withheld)
        cid = self._call_id(rnd)
        self.sim.reply(parent, calls=(ToolCall(id=cid, name="spawn", arguments="{}"),))
        self.opened += 1
        sid = f"s{self.opened}"
        self.sim.open_ctx(
            sid, "sub", parent, system="You are a sub-agent.", offered_tools=["fs-read"], parent_call=cid
        )
        self.stack.append(_Ctx(sid, "sub"))
        self.sim.user("find the file", sid)
        for _ in range(rnd.randrange(1, 3)):
            self.tools(rnd, TurnOptions(offered_tools=("fs-read",)))
        self.sim.request(sid, self.origin, TurnOptions(), self.withheld)
        self.sim.reply(sid, text="found it")
        self.stack.pop()
        self.sim.close_ctx(sid, parent, "found it")
        ev = self.sim.result(cid, "found it", parent, "spawn")
        self.ctx.results.append(ev.seq)

    def resume(self, rnd: random.Random) -> None:
        later = [v for v in KNOWN_VERSIONS if v >= self.sim.version]
        self.sim.resume(recipe(rnd.choice(later)))

    def summarize(self, rnd: random.Random) -> None:
        if self.ctx.id != "main" or len(self.sim.events) < 10:
            return
        if self.summaries and rnd.random() < 0.3:
            self.sim.revoke(self.summaries.pop(rnd.randrange(len(self.summaries))))
            return
        users = [e.seq for e in self.sim.events if e.kind == "user.msg" and e.ctx == "main"]
        if len(users) >= 2 and rnd.random() < 0.8:  # whole turns: a span that can be used
            i = rnd.randrange(len(users) - 1)
            first, last = users[i], users[i + 1] - 1
        else:
            first = rnd.randrange(2, len(self.sim.events) - 4)
            last = rnd.randrange(first, len(self.sim.events))
        stale = rnd.random() < 0.1
        ev = self.sim.summary(
            first, last, "They read files. " * rnd.randrange(1, 5), digest="bad" if stale else None
        )
        self.summaries.append(ev.seq)


_ACTIONS = [
    "user",
    "tools",
    "tools",
    "tools",
    "text_turn",
    "special_turn",
    "plan",
    "fold",
    "image",
    "switch",
    "narrow",
    "end",
    "sub",
    "resume",
    "summarize",
    "summarize",
    "fold",
    "end",
    "tools",
]

scripts = st.lists(
    st.tuples(st.integers(0, len(_ACTIONS) - 1), st.integers(0, 2**32)), min_size=1, max_size=30
)


@st.composite
def sessions(draw: st.DrawFn, versions: tuple[int, ...] = KNOWN_VERSIONS, summaries: bool = True) -> Sim:
    version = draw(st.sampled_from(versions))
    script = draw(scripts)
    if not summaries:
        script = [(a, s) for a, s in script if _ACTIONS[a % len(_ACTIONS)] != "summarize"]
    d = Driver(version)
    sim = d.run(script)
    # end with a request in the innermost context, so every session has one
    sim.request(d.ctx.id, d.origin, TurnOptions(), d.withheld)
    return sim


def batch(
    sim: Sim,
    results: list[tuple[str, str]] | None = None,
    *,
    ctx: str = "main",
    origin: Origin = ORIGIN_A,
    text: str = "",
    thinking: str = "",
    blocks: tuple[ThinkingBlock, ...] = (),
    name: str = "shell",
    order: list[int] | None = None,
    errors: tuple[int, ...] = (),
    turn: TurnOptions = PLAIN,
) -> tuple[Build, int, list[int]]:
    """A request, then a reply calling one tool per (call id, result text), then the results.

    Returns the build, the reply's seq and the results' seqs (in call order).
    """
    results = results or []
    b = sim.request(ctx, origin, turn)
    calls = tuple(ToolCall(id=cid, name=name, arguments="{}") for cid, _ in results)
    reply = sim.reply(ctx, text=text, thinking=thinking, calls=calls, blocks=blocks)
    seqs = [0] * len(results)
    for k in order if order is not None else range(len(results)):
        cid, out = results[k]
        seqs[k] = sim.result(cid, out, ctx, name, error=k in errors).seq
    return b, reply.seq, seqs


def started(version: int = 19, **kw: Any) -> Sim:
    sim = Sim()
    sim.start(recipe(version, **kw))
    return sim


def select(start: Start, events: Iterable[Event]) -> list[Event]:
    """The events a window from ``start`` is fed, out of the whole log's."""
    keep = set(start.keep)
    return [e for e in events if e.seq >= start.seq or e.seq in keep]
