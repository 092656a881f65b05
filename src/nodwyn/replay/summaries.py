"""Reviewed summaries on a closed session: add, revoke, list.

A person writes a summary of a span of the conversation and appends it to the session's log
(``summary.add``); later windows of a resumed session (recipe window-v2 and up) show it in place of
the span's eligible part, and ``summary.revoke`` takes it back. This module only appends: it takes
the log's exclusive lock (a live session holding it is refused with ``LockedError``), validates
the source bounds against the log, and writes through ``log.append``, the log's one redacting
path. It never builds a runtime, reads configuration or extension files, or runs a model.

The bounds rules (ADR 0039):
- ``first`` is a person's message (a turn starts there) and ``last`` ends a turn: the next
  conversation event of the same context after it, if any, is a person's message;
- every event in the span is in the context of ``first``, or in a context opened and closed
  inside the span (a sub-agent's);
- no request in the span is open: each ``llm.req`` has its ``llm.resp`` and each call of a reply
  its ``tool.result`` inside the span;
- the span holds no session, summary or widen events.

The source digest is the window's ``window.summaries.source_digest`` of the span's events as the
log holds them (already redacted), so the window that later shows the summary can tell whether its
source is still what the person summarised.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from nodwyn.errors import ConfigError, NotFoundError
from nodwyn.log import SessionLog
from nodwyn.values.events import (
    CTX_CLOSE,
    CTX_OPEN,
    CTX_WIDEN,
    GATE_PLAN,
    LLM_REQ,
    LLM_RESP,
    RESULT_FOLD,
    SESSION_RESUME,
    SESSION_START,
    SUMMARY_ADD,
    SUMMARY_REVOKE,
    TOOL_RESULT,
    USER_MSG,
    CtxClose,
    CtxOpen,
    Event,
    LlmResp,
    SummaryAdd,
    SummaryRevoke,
    ToolResult,
    decoded,
)
from nodwyn.window import source_digest

_CONVERSATION = frozenset({USER_MSG, LLM_REQ, LLM_RESP, TOOL_RESULT, GATE_PLAN, RESULT_FOLD})
_NOT_IN_SPAN = frozenset({SESSION_START, SESSION_RESUME, SUMMARY_ADD, SUMMARY_REVOKE, CTX_WIDEN})


def check_span(events: Sequence[Event], first: int, last: int, session: str = "") -> list[Event]:
    """Validate ``first..last`` against ``events`` (the log from ``first`` on); return the span.

    Raises ``NotFoundError`` when a bound is not in the log and ``ConfigError`` naming the rule a
    span breaks and how to choose better bounds.
    """
    where = f"session {session}" if session else "the session"
    pre = f"session {session}: " if session else ""
    if first < 1 or last < first:
        raise ConfigError(
            f"{pre}summary bounds --from {first} --to {last} are not a range; give 1 <= FROM <= TO"
        )
    by_seq = {e.seq: i for i, e in enumerate(events)}
    if first not in by_seq:
        raise NotFoundError(f"--from {first}: {where} has no event with that seq")
    if last not in by_seq:
        raise NotFoundError(f"--to {last}: {where} has no event with that seq")
    span = list(events[by_seq[first] : by_seq[last] + 1])
    start = span[0]
    if start.kind != USER_MSG:
        raise ConfigError(
            f"{pre}--from {first} is a {start.kind}, not a person's message; a summary covers whole turns, "
            "so start it at a user.msg"
        )
    inside = _sub_contexts(span, pre, f"{first}..{last}")
    for e in span:
        if e.ctx != start.ctx and e.ctx not in inside:
            raise ConfigError(
                f"{pre}seq {e.seq} is in context {e.ctx!r}, not {start.ctx!r}: a summary stays inside one "
                "context (a sub-context it covers must open and close inside the span)"
            )
    _nothing_open(span, pre, f"{first}..{last}")
    _ends_a_turn(events[by_seq[last] + 1 :], start.ctx, f"{pre}--to {last}")
    return span


def _sub_contexts(span: Sequence[Event], pre: str, bounds: str) -> set[str]:
    """The contexts opened and closed inside the span (a sub-agent's); refuses an event a span
    cannot hold."""
    opened: set[str] = set()
    closed: set[str] = set()
    for e in span:
        if e.kind in _NOT_IN_SPAN:
            raise ConfigError(f"{pre}seq {e.seq} in {bounds} is a {e.kind}; a summary's span holds none")
        p = decoded(e, CTX_OPEN, CTX_CLOSE)
        if isinstance(p, CtxOpen):
            opened.add(p.id)
        elif isinstance(p, CtxClose):
            closed.add(p.id)
    return opened & closed


def _nothing_open(span: Sequence[Event], pre: str, bounds: str) -> None:
    """Each request of the span has its reply, and each call of a reply its result, inside it."""
    open_reqs = {e.seq for e in span if e.kind == LLM_REQ}
    open_calls: dict[tuple[str, str], int] = {}
    for e in span:
        p = decoded(e, LLM_RESP, TOOL_RESULT)
        if isinstance(p, LlmResp):
            open_reqs.discard(p.req)
            for call in p.response.calls:
                open_calls[(e.ctx, call.id)] = e.seq
        elif isinstance(p, ToolResult):
            open_calls.pop((e.ctx, p.call_id), None)
    if open_reqs:
        s = min(open_reqs)
        raise ConfigError(f"{pre}request seq {s} has no reply inside {bounds}; end the span after its reply")
    if open_calls:
        (_, cid), s = min(open_calls.items(), key=lambda kv: kv[1])
        raise ConfigError(
            f"{pre}call {cid!r} of reply seq {s} has no result inside {bounds}; end the span after its result"
        )


def _ends_a_turn(after: Sequence[Event], ctx: str, bound: str) -> None:
    """The context's next conversation event after the span, if any, is a person's message."""
    for e in after:
        if e.ctx != ctx or e.kind not in _CONVERSATION:
            continue
        if e.kind != USER_MSG:
            raise ConfigError(
                f"{bound} ends inside a turn (seq {e.seq}, a {e.kind}, continues it); "
                "end the span just before the next user.msg of the context"
            )
        return


Status = Literal["active", "revoked", "superseded", "stale"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryInfo:
    seq: int
    ctx: str
    first: int
    last: int
    text: str
    source_digest: str
    status: Status
    by: int | None = None  # the revoking or superseding event's seq


def _info(e: Event, a: SummaryAdd, status: Status, by: int | None = None) -> SummaryInfo:
    return SummaryInfo(
        seq=e.seq,
        ctx=e.ctx,
        first=a.first,
        last=a.last,
        text=a.text,
        source_digest=a.source_digest,
        status=status,
        by=by,
    )


def list_summaries(events: Sequence[Event]) -> list[SummaryInfo]:
    """Every ``summary.add`` of a log with its status.

    ``revoked``: a later ``summary.revoke`` names it. ``superseded``: a later summary overlaps its
    span in the same context (revoked or stale, it still hides this one: its source shows, ADR
    0300). ``stale``: its span's events no longer hash to its source digest (the log was altered).
    Otherwise ``active``.
    """
    by_seq = {e.seq: e for e in events}
    revoked: dict[int, int] = {}
    adds: list[tuple[Event, SummaryAdd]] = []  # a payload that does not decode is left out
    for e in events:
        p = decoded(e, SUMMARY_REVOKE, SUMMARY_ADD)
        if isinstance(p, SummaryRevoke):
            revoked.setdefault(p.summary, e.seq)
        elif isinstance(p, SummaryAdd):
            adds.append((e, p))
    out: list[SummaryInfo] = []
    for e, a in adds:
        span = [by_seq[s] for s in range(a.first, a.last + 1) if s in by_seq]
        if e.seq in revoked:
            out.append(_info(e, a, "revoked", revoked[e.seq]))
            continue
        if len(span) != a.last - a.first + 1 or source_digest(span) != a.source_digest:
            out.append(_info(e, a, "stale"))
            continue
        newer = [
            o.seq
            for o, b in adds
            if o.seq > e.seq and o.ctx == e.ctx and b.first <= a.last and a.first <= b.last
        ]
        out.append(_info(e, a, "superseded", newer[0]) if newer else _info(e, a, "active"))
    return out


# -- on a session's log --------------------------------------------------------------------------


def add_summary(log: SessionLog, first: int, last: int, text: str) -> Event:
    """Append ``summary.add`` for ``first..last`` to a log opened for writing (it holds the lock)."""
    if not log.writable:
        raise ConfigError(f"session {log.id}: open the log for writing to add a summary")
    if not text.strip():
        raise ConfigError(f"session {log.id}: the summary text is empty; write the reviewed summary in FILE")
    events = list(log.read(first))
    span = check_span(events, first, last, log.id)
    add = SummaryAdd(first=first, last=last, text=text, source_digest=source_digest(span))
    return log.append(add, ctx=span[0].ctx)


def revoke_summary(log: SessionLog, summary_seq: int) -> Event:
    """Append ``summary.revoke`` for the summary at ``summary_seq`` (log opened for writing), if it
    exists and is not revoked yet."""
    if not log.writable:
        raise ConfigError(f"session {log.id}: open the log for writing to revoke a summary")
    events = list(log.read(summary_seq))
    where = f"session {log.id}"
    target = next((e for e in events if e.seq == summary_seq), None)
    if target is None:
        raise NotFoundError(
            f"{where} has no event seq {summary_seq}; `nodwyn summary list` shows its summaries"
        )
    if target.kind != SUMMARY_ADD:
        raise ConfigError(
            f"seq {summary_seq} of {where} is a {target.kind}, not a summary.add; "
            "`nodwyn summary list` shows its summaries"
        )
    for e in events:
        p = decoded(e, SUMMARY_REVOKE)
        if isinstance(p, SummaryRevoke) and p.summary == summary_seq:
            raise ConfigError(f"summary seq {summary_seq} of {where} was already revoked at seq {e.seq}")
    return log.append(SummaryRevoke(summary=summary_seq), ctx=target.ctx)
