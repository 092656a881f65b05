"""What the turn loop follows from the log: the context it is in, the model, the tool results
hygiene reads, the folds done, the attached images, how many contexts were opened and the last
request's estimate. ``LoopState.follow`` takes every event in seq order, so a resumed session
rebuilds the same state from its log; ``interrupted`` finds what an interruption left open.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from nodwyn.agent.strategies import ResultRecord
from nodwyn.values.content import ToolCall
from nodwyn.values.events import MAIN_CTX, Event

INTERRUPTED = "interrupted: the session stopped before this call was answered; call it again if needed"
SUB_INTERRUPTED = "(interrupted before it answered)"


def _calls(event: Event) -> dict[str, ToolCall]:
    """The tool calls of an ``llm.resp``, by id."""
    calls = event.data.get("response", {}).get("calls", [])
    return {c["id"]: ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"]) for c in calls}


@dataclass(slots=True)
class LoopState:
    ctx: str = MAIN_CTX
    model: str = ""
    results: list[ResultRecord] = field(default_factory=list)
    folded: set[int] = field(default_factory=set)
    images: dict[str, dict[str, Any]] = field(default_factory=dict)
    contexts: int = 0
    last_estimate: int = 0
    calls: dict[str, ToolCall] = field(default_factory=dict)  # every call seen, by id

    def follow(self, event: Event) -> None:
        d = event.data
        if event.kind == "llm.resp":
            self.calls.update(_calls(event))
        elif event.kind == "tool.result":
            self.results.append(result_record(event, self.calls.get(d["call_id"])))
        elif event.kind == "result.fold":
            self.folded.add(d["target"])
        elif event.kind == "user.msg":
            for ref in d.get("images", []):
                self.images[ref["digest"]] = ref
        elif event.kind == "model.switch":
            self.model = d["model"]
        elif event.kind == "ctx.open":
            self.contexts += 1
            if d.get("kind") == "narrow":
                self.ctx = d["id"]
                self.last_estimate = 0
        elif event.kind in ("session.start", "session.resume"):
            self.model = d.get("model", self.model)
        elif event.kind == "llm.req" and event.ctx == self.ctx:
            self.last_estimate = int(d.get("estimate", 0))


def result_record(event: Event, call: ToolCall | None) -> ResultRecord:
    """What hygiene needs of one ``tool.result``: the call's target (path, command or pattern)."""
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


def interrupted(events: Iterable[Event], ctx: str) -> list[tuple[str, dict[str, Any], str]]:
    """The events (kind, data, ctx) that make a conversation whole after an interruption: each
    sub-agent context left open is closed (innermost first), and each call of ``ctx``'s last reply
    left without a result is answered with an error saying so."""
    opened: dict[str, Event] = {}
    pending: dict[str, dict[str, ToolCall]] = {}
    for event in events:
        d = event.data
        if event.kind == "ctx.open" and d.get("kind") == "sub":
            opened[d["id"]] = event
        elif event.kind == "ctx.close":
            opened.pop(d["id"], None)
        elif event.kind == "llm.resp":
            pending[event.ctx] = _calls(event)
        elif event.kind == "tool.result":
            pending.get(event.ctx, {}).pop(d["call_id"], None)
    out: list[tuple[str, dict[str, Any], str]] = []
    for sub_id, event in sorted(opened.items(), key=lambda kv: -kv[1].seq):
        out.append(("ctx.close", {"id": sub_id, "result": SUB_INTERRUPTED}, event.ctx))
        pending.pop(sub_id, None)
    for call in pending.get(ctx, {}).values():
        data = {"call_id": call.id, "name": call.name, "text": INTERRUPTED, "error": True}
        out.append(("tool.result", data, ctx))
    return out
