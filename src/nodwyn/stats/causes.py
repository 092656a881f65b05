"""What we did between two requests of one context that may move the second one's prefix.

A request's prefix (system prompt, tools, messages) stays its predecessor's unless the window
was told to change something: a trim, a fold, a summary, a model switch, a new task or plan (only
before recipe v15, where they lived in the system prompt), a resume, a narrowing, or a different
set of offered tools or withheld images. Each is named with the seq that did it. Whether the prefix
really moved is decided from the rebuilt requests (``diagnosis``); these are the candidates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

from nodwyn.values.events import Event

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
]

# Kinds that affect every context, whatever ctx they were logged in.
_GLOBAL: Final = {"session.resume": "resume", "model.switch": "model switch"}
# Kinds that affect the context they were logged in.
_LOCAL: Final = {
    "result.fold": "fold",
    "summary.add": "summary",
    "summary.revoke": "summary",
    "ctx.open": "narrowing",
    "ctx.close": "narrowing",
    "ctx.widen": "narrowing",
}
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
_HEADER: Final = {"user.msg": "new task", "gate.plan": "plan"}


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
    if kind is None and event.kind in ("ctx.open", "ctx.close", "ctx.widen") and event.data.get("id") == ctx:
        kind = "narrowing"
    return None if kind is None else Cause(kind=kind, seq=event.seq)  # type: ignore[arg-type]


def request_causes(
    seq: int, record: dict[str, Any], previous: dict[str, Any] | None, known: list[Cause]
) -> list[Cause]:
    """Causes an llm.req record states itself, compared with its predecessor's record; ``known``
    (the causes events gave) are not repeated. The window's ``moved`` list names what changed;
    each reason not already explained by an event is a cause at this request's seq."""
    causes: list[Cause] = []
    if record.get("trim") is True:
        causes.append(Cause(kind="trim", seq=seq))
    if previous is None:
        return causes
    moved = record.get("moved")
    if isinstance(moved, list):
        have: set[str] = {c.kind for c in known} | {c.kind for c in causes}
        if "system" in moved and have & {"new task", "plan"}:
            have.add("system")  # before v15 the task and plan were the system prompt
        for reason in moved:
            kind = _RECORDED.get(reason) if isinstance(reason, str) else None
            if kind is not None and kind not in have:
                causes.append(Cause(kind=kind, seq=seq))  # type: ignore[arg-type]
                have.add(kind)
        return causes
    have = {c.kind for c in known} | {c.kind for c in causes}
    switched = record.get("model") != previous.get("model") or record.get("origin") != previous.get("origin")
    if switched and "model switch" not in have:
        causes.append(Cause(kind="model switch", seq=seq))
    tools = (record.get("no_tools", False), record.get("offered_tools"))
    if tools != (previous.get("no_tools", False), previous.get("offered_tools")):
        causes.append(Cause(kind="tools", seq=seq))
    if record.get("withheld_images") and record.get("withheld_images") != previous.get("withheld_images"):
        causes.append(Cause(kind="images", seq=seq))
    return causes
