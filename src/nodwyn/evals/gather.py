"""The driver's side of a finished attempt: verify its session by replay, tag it, move it into the
person's store. A session that does not replay whole (torn, damaged, a digest that differs) is
never counted (``GatherError``); it stays in the attempt's folder for a look."""

from __future__ import annotations

from nodwyn.errors import NodwynError
from nodwyn.evals.records import Recorded, write_tags
from nodwyn.evals.worker import Attempt
from nodwyn.log import Store
from nodwyn.replay import check_complete, verify_all
from nodwyn.values.events import LLM_REQ


class GatherError(NodwynError):
    """An attempt's session cannot be counted (none, or it does not replay)."""


def verified(store: Store, session: str) -> int:
    """The number of requests of ``session`` in ``store``, each replayed to its recorded digest."""
    with store.open(session) as log:
        check_complete(log, 0)
        count = 0
        for verdict in verify_all(log):
            if verdict.error is not None:
                raise GatherError(f"session {session} does not replay: {verdict.error}")
            count += 1
        if count == 0 or not any(e.kind == LLM_REQ for e in log.read(1)):
            raise GatherError(f"session {session} holds no request")
        return count


def gather(person: Store, eval_id: str, attempt: Attempt) -> Recorded:
    if attempt.session is None:
        raise GatherError(f"run {attempt.key.label()}: no session ({attempt.reason})")
    worker = Store(attempt.home, known=person.known, seal=person.seal)
    verified(worker, attempt.session)
    record = Recorded(
        eval_id=eval_id,
        key=attempt.key,
        session=attempt.session,
        solved=attempt.solved,
        reason=attempt.reason,
        attempt=attempt.attempt,
    )
    write_tags(worker.folder(attempt.session), record)
    person.adopt(worker, attempt.session)
    return record
