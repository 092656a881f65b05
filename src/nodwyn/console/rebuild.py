"""Rebuild requests by exact replay and diagnose them (the I/O half of ``stats.diagnosis``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nodwyn.errors import NodwynError
from nodwyn.stats.diagnosis import Diagnosis, Rebuilt, diagnose, diagnose_all
from nodwyn.stats.prefix import chunks
from nodwyn.stats.totals import RequestRow
from nodwyn.values.canonical import digest
from nodwyn.values.codec import request_to_json
from nodwyn.values.request import Request


@dataclass(frozen=True, slots=True, kw_only=True)
class Replayed:
    """Request ``seq`` rebuilt from the log and checked against its recorded digest."""

    seq: int
    request: Request | None
    digest: str | None
    error: str | None  # why replay refused it (then ``request`` is None)

    @property
    def rebuilt(self) -> Rebuilt:
        return chunks(self.request) if self.request is not None else (self.error or "not rebuilt")


def _request_of(result: Any) -> Request:
    if isinstance(result, Request):
        return result
    if isinstance(result, tuple):
        return _request_of(result[0])
    return _request_of(result.request)


def replay(log: Any, seq: int) -> Replayed:
    from nodwyn.replay import replay_request

    try:
        request = _request_of(replay_request(log, seq))
    except NodwynError as exc:
        return Replayed(seq=seq, request=None, digest=None, error=str(exc))
    return Replayed(seq=seq, request=request, digest=digest(request_to_json(request)), error=None)


def diagnose_request(log: Any, row: RequestRow, rows: Sequence[RequestRow]) -> tuple[Replayed, Diagnosis]:
    """Replay ``row``'s request and its predecessor and diagnose it. Older requests are matched on
    their reported prompt tokens only (replaying them all would read the log once each)."""
    mine = replay(log, row.seq)
    rebuilt: dict[int, Rebuilt] = {row.seq: mine.rebuilt}
    if row.predecessor is not None:
        rebuilt[row.predecessor] = replay(log, row.predecessor).rebuilt
    by_seq = {r.seq: r for r in rows}
    older = [r.seq for r in rows if r.ctx == row.ctx and r.seq < row.seq]
    return mine, diagnose(row, by_seq, rebuilt, older)


def diagnose_session(log: Any, rows: Sequence[RequestRow]) -> list[Diagnosis]:
    """Replay every request of the session and diagnose each."""
    rebuilt = {row.seq: replay(log, row.seq).rebuilt for row in rows}
    return diagnose_all(rows, rebuilt)
