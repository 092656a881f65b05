"""Replaying a run through nodwyn's window engine.

The run becomes the events a nodwyn session would have logged: ``session.start`` with the recipe
for the budget, the task as ``user.msg``, and for each reply the ``llm.req`` the build decided
(fed back, which is what makes elision sticky), the reply as ``llm.resp``, its results as
``tool.result`` and any other user message as ``user.msg``. Request k is the build before the
k-th reply. The events live in memory; no log is written.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from bench.workloads.measure import Measured, content_size, request_bytes, shared_prefix
from bench.workloads.prepared import Prepared
from bench.workloads.run import WorkloadError

from nodwyn.values.codec import origin_to_json, recipe_to_json, response_to_json
from nodwyn.values.content import AssistantMessage, Origin, TextPart, ToolMessage, UserMessage
from nodwyn.values.events import MAIN_CTX, Event
from nodwyn.values.recipe import CURRENT_VERSION, Recipe, WindowLimits
from nodwyn.values.request import Response

MODEL = "workload"
ORIGIN = Origin(model=MODEL)
T = "2026-01-01T00:00:00.000000Z"  # the window never reads the time; every event carries this one


@dataclass(frozen=True, slots=True, kw_only=True)
class Sizing:
    """How a budget becomes the recipe's limits (see docs/adr/0033)."""

    low_water: float = 0.5  # low water as a share of the budget (high water = the budget)
    max_result_tokens: int | None = None  # None: the window's sizing rule (3,072 for a fixed window)
    output_reserve: int = 4096
    version: int = CURRENT_VERSION

    def limits(self, budget: int) -> WindowLimits:
        """The window's own sizing rule, for a model whose context is the budget plus the reply cap."""
        from nodwyn.window.sizing import ConfiguredLimits, size_limits

        configured = ConfiguredLimits(
            high_water=budget,
            low_water=int(budget * self.low_water),
            max_result_tokens=self.max_result_tokens,
        )
        return size_limits(budget + self.output_reserve, self.output_reserve, configured)

    def recipe(self, p: Prepared, budget: int) -> Recipe:
        limits = self.limits(budget)
        return Recipe(
            version=self.version,
            system=p.run.system,
            tools=p.run.tools,
            limits=limits,
            context_size=budget + self.output_reserve,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineResult:
    requests: list[Measured]
    estimates: list[int]  # the window's own estimate of each request (tokens)
    trims: int  # requests the window recorded as trim points


def replay(p: Prepared, budget: int, sizing: Sizing = Sizing()) -> EngineResult:
    from nodwyn.window import TurnOptions, Window  # the engine; imported only when replayed

    run = p.run
    window = Window()
    seq = 0

    def feed(kind: str, data: dict[str, Any]) -> int:
        nonlocal seq
        seq += 1
        window.feed(Event(seq=seq, t=T, kind=kind, ctx=MAIN_CTX, data=data))
        return seq

    feed("session.start", {"recipe": recipe_to_json(sizing.recipe(p, budget)), "model": MODEL})
    seq_of: list[int] = []
    elided: set[int] = set()
    out: list[Measured] = []
    estimates: list[int] = []
    trims = 0
    prev: list[bytes] = []
    for i, m in enumerate(run.messages):
        if isinstance(m, AssistantMessage):
            b = window.build(ctx=MAIN_CTX, origin=ORIGIN, turn=TurnOptions())
            req = b.request
            tools = p.parts.tools(req.tools)
            msgs = [p.parts.message(x) for x in req.messages]
            system = p.parts.text(req.system)
            canonical = request_bytes(system, tools, msgs, req.max_output)
            record = dict(b.record)
            elided.update(record.get("elided", ()))
            trims += bool(record.get("trim"))
            estimates.append(int(record.get("estimate", 0)))
            cur = [system, *tools, *msgs]
            out.append(
                Measured(
                    stream=sum(len(x) for x in cur),
                    cached=shared_prefix(prev, cur) if prev else 0,
                    size=len(canonical),
                    visible=visible(p, i, seq_of, elided, req.messages),
                    conversation=p.content[i],
                )
            )
            prev = cur
            digest = "sha256:" + hashlib.sha256(canonical).hexdigest()
            req_seq = feed(
                "llm.req", {"model": MODEL, "origin": origin_to_json(ORIGIN), "digest": digest, **record}
            )
            reply = Response(text=m.text, thinking=m.thinking, calls=m.calls, blocks=m.blocks, model=MODEL)
            seq_of.append(feed("llm.resp", {"req": req_seq, "response": response_to_json(reply)}))
        elif isinstance(m, ToolMessage):
            data = {"call_id": m.call_id, "name": m.name, "text": m.text, "error": m.error}
            seq_of.append(feed("tool.result", data))
        else:
            assert isinstance(m, UserMessage)
            text = "".join(x.text for x in m.parts if isinstance(x, TextPart))
            seq_of.append(feed("user.msg", {"text": text}))
    return EngineResult(requests=out, estimates=estimates, trims=trims)


def visible(p: Prepared, end: int, seq_of: list[int], elided: set[int], shown: tuple[Any, ...]) -> int:
    """Content bytes of ``messages[:end]`` that the request still shows.

    The request's messages are the conversation's, in order, each shown whole, shortened (a capped
    result) or elided in place, or left out (the results of an elided batch). A conversation
    message whose seq is elided shows nothing; another shows the smaller of its content and what
    the request shows for it (a task header adds to a message, a cap takes from it)."""
    run = p.run
    j = 0
    total = 0
    for i in range(end):
        m = run.messages[i]
        r = shown[j] if j < len(shown) else None
        if isinstance(m, ToolMessage):
            if not (isinstance(r, ToolMessage) and r.call_id == m.call_id):
                continue  # left out with its batch
        elif r is None or r.role != m.role:
            raise WorkloadError(
                f"{run.name}: request before message {end} shows a {getattr(r, 'role', 'nothing')} message "
                f"where the conversation has message {i} ({m.role}); the alignment in engine.visible is wrong"
            )
        j += 1
        if seq_of[i] not in elided:
            total += min(content_size(m), content_size(r))
    if j != len(shown):
        raise WorkloadError(
            f"{run.name}: request before message {end} has {len(shown) - j} unaligned messages"
        )
    return total
