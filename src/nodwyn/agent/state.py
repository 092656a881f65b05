"""What the turn loop follows from the log: the context it is in, the model, the tool results
hygiene reads, the folds done, the attached images, the last request's estimate, the calls not
answered yet and the sub-agent contexts still open. ``LoopState.follow`` takes the events in seq
order, so a resumed session rebuilds the state from its log (from its window's start point: what
is before it no request needs); ``interrupted`` says what an interruption left open, without
reading the log again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from nodwyn.agent.strategies import ResultRecord
from nodwyn.values.content import ToolCall
from nodwyn.values.events import MAIN_CTX, Event

INTERRUPTED = "interrupted: the session stopped before this call was answered; call it again if needed"
SUB_INTERRUPTED = "(interrupted before it answered)"


@dataclass(slots=True)
class LoopState:
    ctx: str = MAIN_CTX
    model: str = ""
    results: list[ResultRecord] = field(default_factory=list)
    folded: set[int] = field(default_factory=set)
    images: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_estimate: int = 0
    pending: dict[str, dict[str, ToolCall]] = field(default_factory=dict)  # ctx -> unanswered calls
    open_subs: dict[str, Event] = field(default_factory=dict)  # sub-agent id -> its ctx.open
    narrowed_from: dict[str, str] = field(default_factory=dict)  # narrowing id -> the context it narrowed

    def follow(self, event: Event) -> None:
        d = event.data
        if event.kind == "llm.resp":
            calls = d.get("response", {}).get("calls", [])
            self.pending[event.ctx] = {
                c["id"]: ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"]) for c in calls
            }
        elif event.kind == "tool.result":
            call = self.pending.get(event.ctx, {}).pop(d["call_id"], None)
            self.results.append(result_record(event, call))
        elif event.kind == "result.fold":
            self.folded.add(d["target"])
        elif event.kind == "user.msg":
            for ref in d.get("images", []):
                self.images[ref["digest"]] = ref
        elif event.kind == "model.switch":
            self.model = d["model"]
        elif event.kind == "ctx.open":
            if d.get("kind") == "narrow":
                self.narrowed_from[d["id"]] = event.ctx
                self.ctx = d["id"]
                self.last_estimate = 0
            elif d.get("kind") == "sub":
                self.open_subs[d["id"]] = event
        elif event.kind == "ctx.close":
            self.open_subs.pop(d["id"], None)
        elif event.kind == "ctx.widen" and d.get("id") == self.ctx:
            # a narrowing widened back: the conversation goes on in the context it narrowed
            self.ctx = self.narrowed_from.get(self.ctx, MAIN_CTX)
            self.last_estimate = 0
        elif event.kind in ("session.start", "session.resume"):
            self.model = d.get("model", self.model)
        elif event.kind == "llm.req" and event.ctx == self.ctx:
            self.last_estimate = int(d.get("estimate", 0))

    def interrupted(self) -> list[tuple[str, dict[str, Any], str]]:
        """The events (kind, data, ctx) that make the conversation whole after an interruption:
        each sub-agent context left open is closed (innermost first), and each call of the current
        context's last reply left without a result is answered with an error saying so."""
        out: list[tuple[str, dict[str, Any], str]] = []
        for sub_id, event in sorted(self.open_subs.items(), key=lambda kv: -kv[1].seq):
            out.append(("ctx.close", {"id": sub_id, "result": SUB_INTERRUPTED}, event.ctx))
        for call in self.pending.get(self.ctx, {}).values():
            data = {"call_id": call.id, "name": call.name, "text": INTERRUPTED, "error": True}
            out.append(("tool.result", data, self.ctx))
        return out


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
