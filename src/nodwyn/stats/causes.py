"""What we did between two requests of one context that may move the second one's prefix.

A request's prefix (system prompt, tools, messages) stays its predecessor's unless the window
was told to change something: a trim, a fold, a summary, a model switch, a new task or plan (only
before recipe v15, where they lived in the system prompt), a resume, a narrowing, or a different
set of offered tools or withheld images. Each is named with the seq that did it. Whether the prefix
really moved is decided from the rebuilt requests (``diagnosis``); these are the candidates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from nodwyn.values.events import (
    CTX_CLOSE,
    CTX_OPEN,
    CTX_WIDEN,
    GATE_PLAN,
    MODEL_SWITCH,
    RESULT_FOLD,
    SESSION_RESUME,
    SUMMARY_ADD,
    SUMMARY_REVOKE,
    USER_MSG,
    CtxClose,
    CtxOpen,
    CtxWiden,
    Event,
    LlmReq,
    decoded,
)

CauseKind = Literal[
    "trim",
    "fold",
    "summary",
    "model switch",
    "new task",
    "plan",
    "resume",
    "narrowing",
    "tools",
    "images",
    "blocks",
    "system",
    "messages",
    # what another agent did, as its files record it (imported sessions, ADR 0280)
    "compaction",
    "condensation",
    "masked observation",
    "agent",
]
# The reasons an imported request records (llm.seen ``why``) that have a cause kind of their own;
# any other reason is the cause "agent".
AGENT_CAUSES: Final = frozenset({"compaction", "condensation", "masked observation", "system", "tools"})

# Kinds that affect every context, whatever ctx they were logged in.
_GLOBAL: Final = {SESSION_RESUME: "resume", MODEL_SWITCH: "model switch"}
# Kinds that affect the context they were logged in.
_LOCAL: Final = {
    RESULT_FOLD: "fold",
    SUMMARY_ADD: "summary",
    SUMMARY_REVOKE: "summary",
    CTX_OPEN: "narrowing",
    CTX_CLOSE: "narrowing",
    CTX_WIDEN: "narrowing",
}
_CONTEXTS: Final = frozenset({CTX_OPEN, CTX_CLOSE, CTX_WIDEN})
# The window's own record of why a request moved (llm.req "moved"), as cause kinds.
_RECORDED: Final = {
    "trim": "trim",
    "elided": "trim",
    "recipe": "resume",
    "origin": "model switch",
    "images": "images",
    "blocks": "blocks",
    "fold": "fold",
    "summary": "summary",
    "context": "narrowing",
    "system": "system",
    "tools": "tools",
    "messages": "messages",
}
# Before recipe v15 the task and the plan were part of the system prompt.
_HEADER: Final = {USER_MSG: "new task", GATE_PLAN: "plan"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Cause:
    kind: CauseKind
    seq: int

    def __str__(self) -> str:
        return f"{self.kind} at seq {self.seq}"


def event_cause(event: Event, ctx: str, *, headers_in_system: bool) -> Cause | None:
    """The cause ``event`` is for a later request in ``ctx``, or None if it only appends."""
    kind = _GLOBAL.get(event.kind)
    if kind is None and event.ctx == ctx:
        kind = _LOCAL.get(event.kind)
        if kind is None and headers_in_system:
            kind = _HEADER.get(event.kind)
    if kind is None and event.kind in _CONTEXTS:
        p = decoded(event)  # None: a damaged context event names no context
        if isinstance(p, CtxOpen | CtxClose | CtxWiden) and p.id == ctx:
            kind = "narrowing"
    return None if kind is None else Cause(kind=kind, seq=event.seq)  # type: ignore[arg-type]


def request_causes(seq: int, record: LlmReq, previous: LlmReq | None, known: list[Cause]) -> list[Cause]:
    """Causes an llm.req record states itself, compared with its predecessor's record; ``known``
    (the causes events gave) are not repeated. The window's ``moved`` list names what changed;
    each reason not already explained by an event is a cause at this request's seq."""
    causes: list[Cause] = []
    if record.trim:
        causes.append(Cause(kind="trim", seq=seq))
    if previous is None:
        return causes
    if record.moved is not None:
        have: set[str] = {c.kind for c in known} | {c.kind for c in causes}
        if "system" in record.moved and have & {"new task", "plan"}:
            have.add("system")  # before v15 the task and plan were the system prompt
        for reason in record.moved:
            kind = _RECORDED.get(reason)
            if kind is not None and kind not in have:
                causes.append(Cause(kind=kind, seq=seq))  # type: ignore[arg-type]
                have.add(kind)
        return causes
    have = {c.kind for c in known} | {c.kind for c in causes}
    switched = record.model != previous.model or record.origin != previous.origin
    if switched and "model switch" not in have:
        causes.append(Cause(kind="model switch", seq=seq))
    if (bool(record.no_tools), record.offered_tools) != (bool(previous.no_tools), previous.offered_tools):
        causes.append(Cause(kind="tools", seq=seq))
    if record.withheld_images and record.withheld_images != previous.withheld_images:
        causes.append(Cause(kind="images", seq=seq))
    return causes
