"""Per-session aggregates the console keeps between requests, refreshed from new events only."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from nodwyn.console.source import Source
from nodwyn.log import SessionLog
from nodwyn.replay import diagnose_request, diagnose_session
from nodwyn.stats import Aggregator, Diagnosis, RequestRow, Totals
from nodwyn.values.events import (
    MODEL_SWITCH,
    SESSION_RESUME,
    SESSION_START,
    USER_MSG,
    Event,
    ModelSwitch,
    SessionResume,
    SessionStart,
    UserMsg,
    decoded,
)
from nodwyn.values.model import Prices

# More new events than this are read on a private reader, so the transcript's page reads go on.
BULK = 1000


def title_of(event: Event) -> str | None:
    """A session's title from its first person's message: the first line, up to 120 characters."""
    p = decoded(event, USER_MSG)
    if not isinstance(p, UserMsg):
        return None
    return p.text.strip().splitlines()[0][:120] if p.text.strip() else ""


def model_of(event: Event) -> str | None:
    """The model entry a session started (or resumed) with."""
    p = decoded(event, SESSION_START, SESSION_RESUME)
    return p.model if isinstance(p, SessionStart | SessionResume) else None


# More newly answered requests than this are diagnosed by one pass over the session instead.
LIVE_DIAGNOSE = 40


class SessionState:
    """One session's aggregator; ``refresh`` feeds it the events appended since it last looked."""

    def __init__(self, source: Source, session: str, prices: Mapping[str, Prices]) -> None:
        self.source = source
        self.id = session
        self.agg = Aggregator(prices)
        self.title: str | None = None
        self.model: str | None = None
        self.reads = 0  # how many times new events were read from the log
        self.diagnosed: tuple[int, list[Diagnosis]] | None = None  # (last_seq, diagnoses)
        self._lock = threading.Lock()
        self._diagnosing = threading.Lock()

    def refresh(self) -> None:
        with self._lock:
            last = self.source.last_seq(self.id)
            if last <= self.agg.last_seq:
                return
            self.reads += 1
            if last - self.agg.last_seq > BULK:  # a long read goes on a reader of its own
                with self.source.private(self.id) as log:
                    self._feed(log)
            else:
                self.source.with_log(self.id, self._feed)

    def _feed(self, log: SessionLog) -> None:
        for event in log.read(self.agg.last_seq + 1, None):
            self._note(event)
            self.agg.feed(event)

    def snapshot(self, after: int = 0) -> tuple[int, Totals, tuple[RequestRow, ...]]:
        """Last seq, totals and the rows changed after ``after`` (all rows for 0), read together
        while no other request feeds the aggregator."""
        with self._lock:
            rows = self.agg.rows if after == 0 else tuple(self.agg.rows_updated_after(after))
            return self.agg.last_seq, self.agg.totals(), rows

    def totals(self) -> Totals:
        with self._lock:
            return self.agg.totals()

    def diagnoses(self) -> list[Diagnosis]:
        """Every request diagnosed by one replay pass, kept until the session grows."""
        self.refresh()
        with self._diagnosing:  # one pass at a time; polls go on meanwhile
            with self._lock:
                last, rows = self.agg.last_seq, self.agg.rows
            done = self.diagnosed
            if done is not None and done[0] == last:
                return done[1]
            return self._diagnose_all(last, rows)

    def _diagnose_all(self, last: int, rows: tuple[RequestRow, ...]) -> list[Diagnosis]:
        with self.source.private(self.id) as log:
            found = diagnose_session(log, rows)
        self.diagnosed = (last, found)
        return found

    def diagnoses_after(self, after: int) -> tuple[int, list[Diagnosis]]:
        """The requests answered after seq ``after`` diagnosed, each by replaying it and its
        predecessor (a live session costs two replays per new request, not a pass over the log)."""
        self.refresh()
        with self._diagnosing:
            with self._lock:
                last, rows = self.agg.last_seq, self.agg.rows
            fresh = [r for r in rows if r.resp is not None and r.resp > after]
            if len(fresh) > LIVE_DIAGNOSE:
                wanted = {r.seq for r in fresh}
                return last, [d for d in self._diagnose_all(last, rows) if d.seq in wanted]
            with self.source.private(self.id) as log:
                return last, [diagnose_request(log, row, rows)[1] for row in fresh]

    def _note(self, event: Event) -> None:
        p = decoded(event, SESSION_START, SESSION_RESUME, MODEL_SWITCH)
        if isinstance(p, SessionStart | SessionResume | ModelSwitch):
            self.model = p.model
        if self.title is None:
            self.title = title_of(event)


class Registry:
    """The sessions the console has opened, each aggregated once and kept up to date."""

    def __init__(self, source: Source, prices: Mapping[str, Prices]) -> None:
        self.source = source
        self.prices = dict(prices)
        self._states: dict[str, SessionState] = {}
        self._lock = threading.Lock()

    def get(self, session: str) -> SessionState:
        with self._lock:
            state = self._states.get(session)
            if state is None:
                self.source.check(session)  # NotFoundError before anything is kept
                state = SessionState(self.source, session, self.prices)
                self._states[session] = state
        state.refresh()
        return state

    def known(self, session: str) -> SessionState | None:
        return self._states.get(session)
