"""What the turn loop follows from the log: the context it is in, the model, the tool results
hygiene reads, the folds done, the attached images, the last request's estimate, the calls not
answered yet and the sub-agent contexts still open. ``LoopState.follow`` takes the events in seq
order, so a resumed session rebuilds the state from its log (from its window's start point: what
is before it no request needs); ``interrupted`` says what an interruption left open, without
reading the log again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import assert_never

from nodwyn.log import SessionLog
from nodwyn.record import resumed_events
from nodwyn.values.arguments import ArgumentsError, load_arguments
from nodwyn.values.content import ToolCall
from nodwyn.values.events import (
    MAIN_CTX,
    CtxClose,
    CtxOpen,
    CtxWiden,
    Event,
    GatePlan,
    ImageRef,
    LlmReq,
    LlmResp,
    LogRepaired,
    ModelSwitch,
    Note,
    Observed,
    Payload,
    ResultFold,
    SessionResume,
    SessionStart,
    SummaryAdd,
    SummaryRevoke,
    ToolResult,
    UserMsg,
    decode,
)
from nodwyn.values.model import ModelEntry
from nodwyn.window import Window


@dataclass(frozen=True, slots=True, kw_only=True)
class ResultRecord:
    """What hygiene needs to know about one tool result in the log."""

    seq: int
    ctx: str
    name: str
    path: str | None  # the file it read, wrote or edited
    target: str | None  # what it acted on: the path, the command or the pattern
    whole: bool  # an fs-read of the whole file
    error: bool
    first_line: str


INTERRUPTED = "interrupted: the session stopped before this call was answered; call it again if needed"
SUB_INTERRUPTED = "(interrupted before it answered)"


@dataclass(slots=True)
class LoopState:
    ctx: str = MAIN_CTX
    model: str = ""
    results: list[ResultRecord] = field(default_factory=list)
    folded: set[int] = field(default_factory=set)
    images: dict[str, ImageRef] = field(default_factory=dict)
    last_estimate: int = 0
    pending: dict[str, dict[str, ToolCall]] = field(default_factory=dict)  # ctx -> unanswered calls
    open_subs: dict[str, Event] = field(default_factory=dict)  # sub-agent id -> its ctx.open
    narrowed_from: dict[str, str] = field(default_factory=dict)  # narrowing id -> the context it narrowed
    # ctx -> (the model entry of its last request, the provider's id of its reply, when kept):
    # what the next request asks the provider's cache diagnosis against (ADR 0312)
    replies: dict[str, tuple[str, str]] = field(default_factory=dict)
    asked_with: dict[str, str] = field(default_factory=dict)  # ctx -> model entry of its last request
    said: dict[str, str] = field(default_factory=dict)  # ctx -> the text of its latest user message

    def follow(self, event: Event) -> None:
        p = decode(event)
        if isinstance(p, LlmResp):
            self.pending[event.ctx] = {c.id: c for c in p.response.calls}
            entry = self.asked_with.get(event.ctx)
            if p.response.id is not None and entry is not None:
                self.replies[event.ctx] = (entry, p.response.id)
        elif isinstance(p, ToolResult):
            call = self.pending.get(event.ctx, {}).pop(p.call_id, None)
            self.results.append(result_record(event.seq, event.ctx, p, call))
            for ref in p.images or ():
                self.images[ref.digest] = ref
        elif isinstance(p, ResultFold):
            self.folded.add(p.target)
        elif isinstance(p, UserMsg):
            self.said[event.ctx] = p.text
            for ref in p.images or ():
                self.images[ref.digest] = ref
        elif isinstance(p, ModelSwitch):
            self.model = p.model
        elif isinstance(p, CtxOpen):
            if p.kind == "narrow":
                self.narrowed_from[p.id] = event.ctx
                self.ctx = p.id
                self.last_estimate = 0
            else:
                self.open_subs[p.id] = event
        elif isinstance(p, CtxClose):
            self.open_subs.pop(p.id, None)
        elif isinstance(p, CtxWiden):
            if p.id == self.ctx:  # a narrowing widened back (not another context's, which the loop is not in)
                self.ctx = self.narrowed_from.get(self.ctx, MAIN_CTX)  # it goes on in the one it narrowed
                self.last_estimate = 0
        elif isinstance(p, SessionStart | SessionResume):
            self.model = p.model
        elif isinstance(p, LlmReq):
            self.asked_with[event.ctx] = p.model
            if event.ctx == self.ctx:
                self.last_estimate = p.estimate
        elif isinstance(p, GatePlan | Note | SummaryAdd | SummaryRevoke | LogRepaired | Observed):
            pass  # nothing the loop follows
        else:
            assert_never(p)

    def compare_with(self, ctx: str, settings: ModelEntry, models: Mapping[str, ModelEntry]) -> str | None:
        """The provider's id of the context's previous reply, when the entry asks for the provider's
        cache diagnosis and that reply came from the same API and address (ADR 0312)."""
        if not settings.cache_diagnostics or ctx not in self.replies:
            return None
        entry, reply_id = self.replies[ctx]
        before = models.get(entry)
        if before is None or (before.api, before.base_url) != (settings.api, settings.base_url):
            return None
        return reply_id

    def interrupted(self) -> list[tuple[Payload, str]]:
        """The events (payload, ctx) that make the conversation whole after an interruption:
        each sub-agent context left open is closed (innermost first), and each call of the current
        context's last reply left without a result is answered with an error saying so."""
        out: list[tuple[Payload, str]] = []
        for sub_id, event in sorted(self.open_subs.items(), key=lambda kv: -kv[1].seq):
            out.append((CtxClose(id=sub_id, result=SUB_INTERRUPTED), event.ctx))
        for call in self.pending.get(self.ctx, {}).values():
            answer = ToolResult(call_id=call.id, name=call.name, text=INTERRUPTED, error=True)
            out.append((answer, self.ctx))
        return out


def result_record(seq: int, ctx: str, result: ToolResult, call: ToolCall | None) -> ResultRecord:
    """What hygiene needs of one ``tool.result``: the call's target (path, command or pattern)."""
    args: object = {}
    if call is not None:
        with contextlib.suppress(ArgumentsError):  # not JSON, or too deep or long to read: nothing to go by
            args = load_arguments(call.arguments)
    args = args if isinstance(args, dict) else {}
    path = args["path"].removeprefix("./") or "." if isinstance(args.get("path"), str) else None
    found = path if path is not None else args.get("command", args.get("pattern"))
    text = result.text.strip()
    return ResultRecord(
        seq=seq,
        ctx=ctx,
        name=result.name,
        path=path,
        target=found if isinstance(found, str) else None,
        whole=path is not None and "lines" not in args,
        error=result.error,
        first_line=text.splitlines()[0] if text else "",
    )


def rebuild(log: SessionLog, window: Window, model: str) -> tuple[int, LoopState]:
    """Feed ``window`` a resumed session's events (from its start point) and follow them; the first
    seq fed and the loop's state. What a resume checks before it records anything."""
    state = LoopState(model=model)
    first_seq, events = resumed_events(log)
    for event in events:
        window.feed(event)
        state.follow(event)
    return first_seq, state
