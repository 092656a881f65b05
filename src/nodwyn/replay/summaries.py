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
from typing import Any, Literal

from nodwyn.errors import ConfigError, NotFoundError
from nodwyn.log import SessionLog
from nodwyn.values.events import Event
from nodwyn.window.summaries import source_digest

_CONVERSATION = frozenset({"user.msg", "llm.req", "llm.resp", "tool.result", "gate.plan", "result.fold"})
_NOT_IN_SPAN = frozenset({"session.start", "session.resume", "summary.add", "summary.revoke", "ctx.widen"})


def _calls(resp: Event) -> list[str]:
    response = resp.data.get("response")
    calls = response.get("calls") if isinstance(response, dict) else None
    out = []
    for c in calls if isinstance(calls, list) else []:
        if isinstance(c, dict) and isinstance(c.get("id"), str):
            out.append(c["id"])
    return out


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
    if start.kind != "user.msg":
        raise ConfigError(
            f"{pre}--from {first} is a {start.kind}, not a person's message; a summary covers whole turns, "
            "so start it at a user.msg"
        )
    ctx = start.ctx
    opened: set[str] = set()
    closed: set[str] = set()
    for e in span:
        if e.kind in _NOT_IN_SPAN:
            raise ConfigError(
                f"{pre}seq {e.seq} in {first}..{last} is a {e.kind}; a summary's span holds none"
            )
        if e.kind == "ctx.open" and isinstance(e.data.get("id"), str):
            opened.add(e.data["id"])
        if e.kind == "ctx.close" and isinstance(e.data.get("id"), str):
            closed.add(e.data["id"])
    for e in span:
        if e.ctx != ctx and not (e.ctx in opened and e.ctx in closed):
            raise ConfigError(
                f"{pre}seq {e.seq} is in context {e.ctx!r}, not {ctx!r}: a summary stays inside one context "
                "(a sub-context it covers must open and close inside the span)"
            )
    open_reqs = {e.seq for e in span if e.kind == "llm.req"}
    open_calls: dict[tuple[str, str], int] = {}
    for e in span:
        if e.kind == "llm.resp" and isinstance(e.data.get("req"), int):
            open_reqs.discard(e.data["req"])
            for cid in _calls(e):
                open_calls[(e.ctx, cid)] = e.seq
        elif e.kind == "tool.result" and isinstance(e.data.get("call_id"), str):
            open_calls.pop((e.ctx, e.data["call_id"]), None)
    if open_reqs:
        s = min(open_reqs)
        raise ConfigError(
            f"{pre}request seq {s} has no reply inside {first}..{last}; end the span after its reply"
        )
    if open_calls:
        (_, cid), s = min(open_calls.items(), key=lambda kv: kv[1])
        raise ConfigError(
            f"{pre}call {cid!r} of reply seq {s} has no result inside {first}..{last}; "
            "end the span after its result"
        )
    for e in events[by_seq[last] + 1 :]:
        if e.ctx != ctx or e.kind not in _CONVERSATION:
            continue
        if e.kind != "user.msg":
            raise ConfigError(
                f"{pre}--to {last} ends inside a turn (seq {e.seq}, a {e.kind}, continues it); "
                "end the span just before the next user.msg of the context"
            )
        break
    return span


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryInfo:
    seq: int
    ctx: str
    first: int
    last: int
    text: str
    source_digest: str
    status: Literal["active", "revoked", "superseded", "stale"]
    by: int | None = None  # the revoking or superseding event's seq


def _int(data: dict[str, Any], key: str) -> int | None:
    v = data.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def list_summaries(events: Sequence[Event]) -> list[SummaryInfo]:
    """Every ``summary.add`` of a log with its status.

    ``revoked``: a later ``summary.revoke`` names it. ``superseded``: a later summary that is not
    revoked overlaps its span in the same context. ``stale``: its span's events no longer hash to
    its source digest (the log was altered). Otherwise ``active``.
    """
    by_seq = {e.seq: e for e in events}
    revoked: dict[int, int] = {}
    for e in events:
        if e.kind == "summary.revoke":
            target = _int(e.data, "summary")
            if target is not None:
                revoked.setdefault(target, e.seq)
    adds = [e for e in events if e.kind == "summary.add"]
    out: list[SummaryInfo] = []
    for e in adds:
        first, last = _int(e.data, "first"), _int(e.data, "last")
        if first is None or last is None:
            continue
        text = e.data.get("text")
        src = e.data.get("source_digest")
        info: dict[str, Any] = {
            "seq": e.seq,
            "ctx": e.ctx,
            "first": first,
            "last": last,
            "text": text if isinstance(text, str) else "",
            "source_digest": src if isinstance(src, str) else "",
        }
        span = [by_seq[s] for s in range(first, last + 1) if s in by_seq]
        if e.seq in revoked:
            out.append(SummaryInfo(**info, status="revoked", by=revoked[e.seq]))
            continue
        if len(span) != last - first + 1 or source_digest(span) != src:
            out.append(SummaryInfo(**info, status="stale"))
            continue
        newer = [
            o.seq
            for o in adds
            if o.seq > e.seq
            and o.seq not in revoked
            and o.ctx == e.ctx
            and (_int(o.data, "first") or 0) <= last
            and first <= (_int(o.data, "last") or 0)
        ]
        if newer:
            out.append(SummaryInfo(**info, status="superseded", by=newer[0]))
        else:
            out.append(SummaryInfo(**info, status="active"))
    return out


def check_revoke(events: Sequence[Event], summary_seq: int, session: str = "") -> Event:
    """The ``summary.add`` that ``summary_seq`` names, if it exists and is not revoked yet."""
    where = f"session {session}" if session else "the session"
    target = next((e for e in events if e.seq == summary_seq), None)
    if target is None:
        raise NotFoundError(
            f"{where} has no event seq {summary_seq}; `nodwyn summary list` shows its summaries"
        )
    if target.kind != "summary.add":
        raise ConfigError(
            f"seq {summary_seq} of {where} is a {target.kind}, not a summary.add; "
            "`nodwyn summary list` shows its summaries"
        )
    for e in events:
        if e.kind == "summary.revoke" and e.data.get("summary") == summary_seq:
            raise ConfigError(f"summary seq {summary_seq} of {where} was already revoked at seq {e.seq}")
    return target


# -- on a session's log --------------------------------------------------------------------------


def add_summary(log: SessionLog, first: int, last: int, text: str) -> Event:
    """Append ``summary.add`` for ``first..last`` to a log opened for writing (it holds the lock)."""
    if not log.writable:
        raise ConfigError(f"session {log.id}: open the log for writing to add a summary")
    if not text.strip():
        raise ConfigError(f"session {log.id}: the summary text is empty; write the reviewed summary in FILE")
    events = list(log.read(first))
    span = check_span(events, first, last, log.id)
    data = {"first": first, "last": last, "text": text, "source_digest": source_digest(span)}
    return log.append("summary.add", data, ctx=span[0].ctx)


def revoke_summary(log: SessionLog, summary_seq: int) -> Event:
    """Append ``summary.revoke`` for the summary at ``summary_seq`` (log opened for writing)."""
    if not log.writable:
        raise ConfigError(f"session {log.id}: open the log for writing to revoke a summary")
    events = list(log.read(summary_seq))
    target = check_revoke(events, summary_seq, log.id)
    return log.append("summary.revoke", {"summary": summary_seq}, ctx=target.ctx)


def summaries(log: SessionLog) -> list[SummaryInfo]:
    """The summaries of a log (any mode), with their status."""
    return list_summaries(list(log.read()))
