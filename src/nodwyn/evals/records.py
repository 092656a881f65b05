"""Where an eval's runs are recorded (ADR 0400): beside each session, never inside its log.

A counted run's tags are ``eval.json`` in its session's folder (eval id, task, variant, run, the
check's verdict and reason, the attempt), written into the worker's copy before the folder is
moved into the person's store, so a session and its tags arrive in one rename. A run with no
session to count (its worker died twice, or it left a session that does not replay) is a line in
``<data root>/evals/<id>/runs.jsonl``; a timeout's session is counted, unsolved, with its reason.
Nothing here is in a request digest: the log's bytes are those the session wrote.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from nodwyn.errors import CorruptLogError
from nodwyn.evals.plan import RunKey
from nodwyn.log import Store

TAGS_NAME = "eval.json"


@dataclass(frozen=True, slots=True, kw_only=True)
class Recorded:
    eval_id: str
    key: RunKey
    session: str | None  # None: a run with no session counted (``runs.jsonl``)
    solved: bool
    reason: str
    attempt: int  # 2: retried once after its worker died
    counted: bool = True  # False: a run that gives no verdict (lost; never in a share)

    def to_data(self) -> dict[str, object]:
        k = self.key
        return {
            "eval": self.eval_id,
            "task": k.task,
            "variant": k.variant,
            "run": k.run,
            "session": self.session,
            "solved": self.solved,
            "reason": self.reason,
            "attempt": self.attempt,
            "counted": self.counted,
        }

    @classmethod
    def from_data(cls, data: object, where: str) -> Recorded:
        if not isinstance(data, dict):
            raise CorruptLogError(f"{where}: an eval record must be a JSON object")
        try:
            key = RunKey(task=str(data["task"]), variant=str(data["variant"]), run=int(data["run"]))
            session = data["session"]
            return cls(
                eval_id=str(data["eval"]),
                key=key,
                session=None if session is None else str(session),
                solved=bool(data["solved"]),
                reason=str(data["reason"]),
                attempt=int(data["attempt"]),
                counted=bool(data.get("counted", True)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptLogError(f"{where}: eval record field {exc} is missing or wrong") from None


def eval_folder(store: Store, eval_id: str) -> Path:
    return store.root / "evals" / eval_id


def write_tags(folder: Path, record: Recorded) -> None:
    path = folder / TAGS_NAME
    path.write_bytes(orjson.dumps(record.to_data()) + b"\n")


def append_unsessioned(store: Store, record: Recorded) -> None:
    folder = eval_folder(store, record.eval_id)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "runs.jsonl", "ab") as f:
        f.write(orjson.dumps(record.to_data()) + b"\n")
        f.flush()
        os.fsync(f.fileno())


def recorded(store: Store, eval_id: str) -> Iterator[Recorded]:
    """Every run of ``eval_id`` recorded in ``store``: sessions' tags, then the session-less lines."""
    for sid in store.ids():
        path = store.sessions / sid / TAGS_NAME
        if path.is_file():
            rec = Recorded.from_data(orjson.loads(path.read_bytes()), str(path))
            if rec.eval_id == eval_id:
                yield rec
    lines = eval_folder(store, eval_id) / "runs.jsonl"
    if lines.is_file():
        for n, line in enumerate(lines.read_bytes().splitlines(), 1):
            if line.strip():
                try:
                    data = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue  # a torn last line (the driver died writing it): never counted
                yield Recorded.from_data(data, f"{lines}:{n}")
