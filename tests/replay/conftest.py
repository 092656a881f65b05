"""Every session a replay test records must replay: each request to the bytes it sent."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nodwyn.log import Store
from nodwyn.replay.exact import replay_request, verify_all
from nodwyn.testing import SessionBuilder, recipe
from nodwyn.values.content import Origin
from nodwyn.values.recipe import Recipe

OTHER_ORIGIN = Origin(model="other-model", server="elsewhere")


def assert_replays(store: Store, script: SessionBuilder) -> int:
    """Every request of ``script`` replays to the bytes it sent; returns how many."""
    with store.open(script.id) as log:
        verdicts = list(verify_all(log))
        bad = [(v.seq, str(v.error)) for v in verdicts if v.error is not None]
        assert not bad, f"session {script.id}: requests refused by verify_all: {bad}"
        assert [v.seq for v in verdicts] == sorted(script.sent), "verify_all did not see every request"
        for seq, sent in script.sent.items():
            assert replay_request(log, seq).canonical == sent, f"request seq {seq} replays to other bytes"
            got = next(v for v in verdicts if v.seq == seq).replayed
            assert got is not None and got.canonical == sent
    return len(script.sent)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "data", fsync=False)


@pytest.fixture
def session(store: Store) -> Iterator[Callable[..., SessionBuilder]]:
    """A factory of recorded sessions; on teardown every request of each must replay exactly."""
    made: list[SessionBuilder] = []

    def make(rec: Recipe | None = None, model: str = "test") -> SessionBuilder:
        s = SessionBuilder(rec or recipe(), store=store, model=model)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()
        assert_replays(store, s)
