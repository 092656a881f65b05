"""Rebuild requests by exact replay and diagnose them (the I/O half of ``stats.diagnosis``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nodwyn.errors import NodwynError
from nodwyn.log import SessionLog
from nodwyn.replay.exact import replay_request, verify_all
from nodwyn.stats import Diagnosis, Encoder, Rebuilt, RequestRow, chunks, diagnose, diagnose_all
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


OBSERVED = (
    "an imported request: another agent sent it and nodwyn did not build it, so there is no digest to verify"
)


def observed_requests(log: SessionLog) -> dict[int, Request]:
    """An imported session's requests as the agent sent them (llm.seen seq -> request), read back
    from the log (``nodwyn.imports.observed``); empty for a session nodwyn ran."""
    from nodwyn.imports import observed

    return observed(log.read())


def replay(log: SessionLog, seq: int, observed: dict[int, Request] | None = None) -> Replayed:
    """Request ``seq`` rebuilt and verified; an observed (imported) request is read back with
    ``error`` saying it is not verified (``observed``: the session's, when the caller has them)."""
    if observed is not None and seq in observed:
        return Replayed(seq=seq, request=observed[seq], digest=None, error=OBSERVED)
    try:
        result = replay_request(log, seq)
    except NodwynError as exc:
        return Replayed(seq=seq, request=None, digest=None, error=str(exc))
    return Replayed(seq=seq, request=result.request, digest=result.digest, error=None)


def diagnose_request(
    log: SessionLog, row: RequestRow, rows: Sequence[RequestRow]
) -> tuple[Replayed, Diagnosis]:
    """Replay ``row``'s request and its predecessor and diagnose it. Older requests are matched on
    their reported prompt tokens only (replaying them all would read the log once each)."""
    seen = observed_requests(log) if row.observed else None
    mine = replay(log, row.seq, seen)
    rebuilt: dict[int, Rebuilt] = {row.seq: mine.rebuilt}
    if row.predecessor is not None:
        rebuilt[row.predecessor] = replay(log, row.predecessor, seen).rebuilt
    by_seq = {r.seq: r for r in rows}
    older = [r.seq for r in rows if r.ctx == row.ctx and r.seq < row.seq]
    return mine, diagnose(row, by_seq, rebuilt, older)


def diagnose_session(log: SessionLog, rows: Sequence[RequestRow]) -> list[Diagnosis]:
    """Replay every request of the session in one pass (``verify_all``) and diagnose each."""
    rebuilt: dict[int, Rebuilt] = {}
    encoder = Encoder()  # each message encoded once, not once per request that shows it
    for verdict in verify_all(log):
        if verdict.replayed is not None:
            rebuilt[verdict.seq] = encoder.chunks(verdict.replayed.request)
        elif verdict.error is not None:
            if verdict.ctx == "-":  # damage stopped the pass: nothing after it is rebuilt
                for row in rows:
                    rebuilt.setdefault(row.seq, str(verdict.error))
            else:
                rebuilt[verdict.seq] = str(verdict.error)
    if any(r.observed for r in rows):
        for seq, request in observed_requests(log).items():
            rebuilt[seq] = encoder.chunks(request)
    return diagnose_all(rows, rebuilt)
