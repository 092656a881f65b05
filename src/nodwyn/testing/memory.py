"""An in-memory event log: what a ``Recorder`` writes to when a test needs no disk."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from nodwyn.values.events import MAIN_CTX, Event, Payload, encode

T = "2026-11-29T00:00:00Z"  # one fixed time: a pure test must not read the clock


class MemoryLog:
    """Append-only and seq-numbered like ``SessionLog``; no redaction, no disk, one fixed time."""

    def __init__(self, session_id: str = "memory") -> None:
        self.id = session_id
        self.events: list[Event] = []

    @property
    def last_seq(self) -> int:
        return len(self.events)

    def append(self, payload: Payload, ctx: str = MAIN_CTX) -> Event:
        """``payload`` as the next event, checked as ``SessionLog.append`` checks it."""
        return self.append_raw(payload.KIND, encode(payload), ctx)

    def append_raw(self, kind: str, data: dict[str, Any], ctx: str = MAIN_CTX) -> Event:
        """An event as given (a test forging a damaged one)."""
        event = Event(seq=len(self.events) + 1, t=T, kind=kind, ctx=ctx, data=dict(data))
        self.events.append(event)
        return event

    def read(self, first: int = 1, last: int | None = None) -> Iterator[Event]:
        end = len(self.events) if last is None else min(last, len(self.events))
        yield from self.events[max(first, 1) - 1 : end]

    def close(self) -> None:
        pass
