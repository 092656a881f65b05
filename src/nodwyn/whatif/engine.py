"""Replaying a conversation through nodwyn's window.

The conversation becomes the events a nodwyn session would have logged: ``session.start`` with the
recipe for the budget, the task as ``user.msg``, and for each reply the ``llm.req`` recorded as
``nodwyn.record.Recorder`` records it (the build's record with its start point, fed back, which is
what makes elision sticky), the reply as ``llm.resp``, its results as ``tool.result`` and any
other user message as ``user.msg``. Request k is the build before the k-th reply. The events live
in memory (``_Events``); nothing is written, so this module stays pure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from nodwyn.errors import WhatifError
from nodwyn.stats import common_parts
from nodwyn.values.content import AssistantMessage, Message, Origin, TextPart, ToolMessage, UserMessage
from nodwyn.values.events import (
    MAIN_CTX,
    Event,
    LlmResp,
    Payload,
    ReqStart,
    SessionStart,
    ToolResult,
    UserMsg,
)
from nodwyn.values.recipe import DEFAULT_VERSION, Flag, Recipe, WindowLimits, policy_for, rules_for
from nodwyn.values.request import Response
from nodwyn.whatif.measure import Measured, content_size, recent_shares, request_size, tokens
from nodwyn.whatif.prepared import Prepared
from nodwyn.window import Build, ConfiguredLimits, Tuning, TurnOptions, Window, size_limits

MODEL = "workload"
ORIGIN = Origin(model=MODEL)
T = "2026-11-29T00:00:00Z"  # one fixed time: the events are never written


class _Events:
    """The replay's events in memory, each fed to the window as it is made; ``request`` does what
    ``nodwyn.record.Recorder.request`` does (build, record the start point, feed the record back)
    without a log."""

    __slots__ = ("seq", "window")

    def __init__(self, window: Window) -> None:
        self.window = window
        self.seq = 0

    def append(self, payload: Payload) -> int:
        """``payload`` as the next event, its seq (never written: the window's ``feed`` checks it)."""
        self.seq += 1
        self.window.feed(Event(seq=self.seq, t=T, kind=payload.KIND, ctx=MAIN_CTX, data=payload.to_data()))
        return self.seq

    def request(self) -> tuple[Build, int]:
        build = self.window.build(MAIN_CTX, origin=ORIGIN, turn=TurnOptions(), withheld={})
        start = self.window.start
        record = replace(build.record, model=MODEL, start=ReqStart(seq=start.seq, keep=start.keep))
        return build, self.append(record)


@dataclass(frozen=True, slots=True, kw_only=True)
class Sizing:
    """How a budget becomes the recipe's limits (see docs/adr/0033)."""

    low_water: float = 0.5  # low water as a share of the budget (high water = the budget)
    max_result_tokens: int | None = None  # None: the window's sizing rule (3,072 for a fixed window)
    output_reserve: int = 4096
    version: int = DEFAULT_VERSION
    above_prefix: bool = False  # low water = fixed prefix + the share of what the budget leaves
    # for measuring rules apart: build with these flags instead of the version's (v19 + one v20
    # rule), and these v20 constants instead of the recipe's; the window's measuring hook
    flags: frozenset[Flag] | None = None
    tuning: Tuning | None = None
    trim_depth: str | None = None  # v21's dial position, recorded in the recipe (None: the default)

    def with_rules(self, version: int, *extra: Flag, trim_depth: str | None = None) -> Sizing:
        """The same sizing on ``version``, with ``extra`` rules switched on besides its own."""
        flags = policy_for(version).flags | set(extra) if extra else None
        return replace(self, version=version, flags=flags, trim_depth=trim_depth)

    def limits(self, budget: int, fixed: int = 0) -> WindowLimits:
        """The window's own sizing rule, for a model whose context is the budget plus the reply cap.

        ``fixed``: tokens the window can never trim (system prompt, catalog, task), used only when
        ``above_prefix`` places low water above them."""
        low = int(budget * self.low_water)
        if self.above_prefix and fixed < budget:
            low = fixed + int((budget - fixed) * self.low_water)
        configured = ConfiguredLimits(
            high_water=budget, low_water=low, max_result_tokens=self.max_result_tokens
        )
        rules = rules_for(self.version)  # the version's sizing rules
        return size_limits(
            budget + self.output_reserve,
            self.output_reserve,
            configured,
            scaled_cap=rules.scaled_cap,
            wide_cap=rules.wide_cap,
        )

    def recipe(self, p: Prepared, budget: int) -> Recipe:
        fixed = tokens(request_size(p.system, p.tools, p.messages[: p.first], None))
        limits = self.limits(budget, fixed)
        return Recipe(
            version=self.version,
            system=p.run.system,
            tools=tuple(p.run.tools),
            limits=limits,
            context_size=budget + self.output_reserve,
            trim_depth=self.trim_depth,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineResult:
    requests: list[Measured]
    estimates: list[int]  # the window's own estimate of each request (tokens)
    trims: int  # requests the window recorded as trim points


def replay(p: Prepared, budget: int, sizing: Sizing = Sizing()) -> EngineResult:
    run = p.run
    rec = _Events(Window(flags=sizing.flags, tuning=sizing.tuning))
    rec.append(SessionStart(recipe=sizing.recipe(p, budget), model=MODEL))
    index_of: dict[int, int] = {}  # seq -> index of the conversation message it logged
    elided: set[int] = set()
    out: list[Measured] = []
    estimates: list[int] = []
    trims = 0
    prev: tuple[bytes, ...] = ()
    for i, m in enumerate(run.messages):
        if isinstance(m, AssistantMessage):
            b, req_seq = rec.request()  # as the agent records it
            req = b.request
            record = b.record
            elided.update(record.elided)
            trims += record.trim
            estimates.append(record.estimate)
            cur = p.parts.chunks(req).parts
            cached = common_parts(prev, cur)[1]
            shown, shortened, recent, task_kept = visible(p, i, index_of, elided, req.messages, b.seqs)
            out.append(
                Measured(
                    stream=sum(len(x) for x in cur),
                    cached=cached,
                    size=len(b.canonical),
                    visible=shown,
                    conversation=p.content[i],
                    shortened=shortened,
                    broken=bool(prev) and cached < sum(len(x) for x in prev),
                    recent=recent,
                    task_kept=task_kept,
                )
            )
            prev = cur
            reply = Response(text=m.text, thinking=m.thinking, calls=m.calls, blocks=m.blocks, model=MODEL)
            index_of[rec.append(LlmResp(req=req_seq, response=reply))] = i
        elif isinstance(m, ToolMessage):
            index_of[rec.append(ToolResult(call_id=m.call_id, name=m.name, text=m.text, error=m.error))] = i
        else:
            assert isinstance(m, UserMessage)
            text = "".join(x.text for x in m.parts if isinstance(x, TextPart))
            index_of[rec.append(UserMsg(text=text))] = i
    return EngineResult(requests=out, estimates=estimates, trims=trims)


def visible(
    p: Prepared,
    end: int,
    index_of: dict[int, int],
    elided: set[int],
    shown: tuple[Message, ...],
    seqs: tuple[int, ...],
) -> tuple[int, int, tuple[float, ...], bool]:
    """Content bytes of ``messages[:end]`` that the request still shows, those it cut from
    messages it shows (result caps), the share of the recent conversation it shows
    (``measure.RECENT``), and whether it shows the task (the messages before the first reply) whole.

    ``seqs`` names the event each of the request's messages came from. A message whose seq is
    elided shows nothing (its marker is not conversation); another shows the smaller of its
    content and what the request shows for it (a task header adds to a message, a cap takes from
    it). Messages the request leaves out (the results of an elided batch) show nothing."""
    if len(seqs) != len(shown):
        raise WhatifError(f"{p.run.name}: the build names {len(seqs)} seqs for {len(shown)} messages")
    total = cut = 0
    parts: list[tuple[int, float]] = []
    for s, r in zip(seqs, shown, strict=True):
        i = index_of.get(s)
        if i is None or i >= end:
            raise WhatifError(
                f"{p.run.name}: request before message {end} shows seq {s}, not a message before it"
            )
        if s not in elided:
            whole = p.content[i + 1] - p.content[i]
            seen = content_size(r)
            total += min(whole, seen)
            cut += max(0, whole - seen)
            parts.append((i, min(whole, seen) / whole if whole else 1.0))
    whole_shown = {i for i, share in parts if share >= 1.0}
    task_kept = all(i in whole_shown or p.content[i + 1] == p.content[i] for i in range(min(p.first, end)))
    return total, cut, recent_shares(p.content, end, sorted(parts)), task_kept
