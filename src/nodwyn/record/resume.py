"""Where a resumed session's window starts, read back from the end of its log.

The last ``llm.req`` records its start point (``window.Start``); a resumed session feeds its window
the events that point keeps and every event from it, so a resume costs the events since the last
request, not the whole log (ADR 0114).
"""

from __future__ import annotations

from collections.abc import Iterator

from nodwyn.errors import CorruptLogError
from nodwyn.log import SessionLog
from nodwyn.values.events import (
    LLM_REQ,
    MODEL_SWITCH,
    SESSION_RESUME,
    SESSION_START,
    SUMMARY_ADD,
    SUMMARY_REVOKE,
    Event,
    LlmReq,
    ModelSwitch,
    SessionResume,
    SessionStart,
    decoded,
)
from nodwyn.window import recorded_start

_WHOLE = frozenset({SUMMARY_ADD, SUMMARY_REVOKE})  # a summary holds the session whole
_MODEL_KINDS = (SESSION_START, SESSION_RESUME, MODEL_SWITCH, LLM_REQ)


def _backwards(log: SessionLog) -> Iterator[Event]:
    """The log's events from the last to the first, each found through the index (a seek)."""
    for seq in range(log.last_seq, 0, -1):
        event = next(log.read(seq, seq), None)
        if event is None or event.seq != seq:
            raise CorruptLogError(f"session {log.id}: seq {seq} cannot be read back; resume needs it")
        yield event


def resume_point(log: SessionLog) -> tuple[int, tuple[int, ...]]:
    """Where a resumed session's window starts (ADR 0114): the start
    point its last ``llm.req`` recorded (``window.Start``: the first seq, and the earlier events
    it keeps), found by reading back from the end to that request through the log's index, so the
    cost is the events since the last request, not the log. Every later event comes after that
    start. A session without such a request, with a summary after it (a summary holds the window
    whole) or with a damaged record is read from seq 1."""
    for event in _backwards(log):
        if event.kind in _WHOLE:
            break
        if event.kind == LLM_REQ:
            start = recorded_start(event)
            return (1, ()) if start is None else (start.seq, start.keep)
    return 1, ()


def resumed_events(log: SessionLog) -> tuple[int, Iterator[Event]]:
    """The start point's seq, and the events a resumed session holds: those the start point keeps,
    then every one from it."""
    start, keep = resume_point(log)

    def events() -> Iterator[Event]:
        for seq in keep:
            event = next(log.read(seq, seq), None)
            if event is None:
                raise CorruptLogError(f"session {log.id}: seq {seq}, which the start point keeps, is missing")
            yield event
        yield from log.read(start)

    return start, events()


def last_model(log: SessionLog) -> str | None:
    """The model entry the session's next request goes to, read back from the end: the last
    session event or model switch, or else the entry the last request went to."""
    for event in _backwards(log):
        if event.kind in _MODEL_KINDS:
            p = decoded(event)  # a damaged payload names no model
            return p.model if isinstance(p, SessionStart | SessionResume | ModelSwitch | LlmReq) else None
    return None
