"""What the CLI tests share: a person's shell environment whose sessions must replay."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodwyn.log import Store
from nodwyn.replay.exact import verify_all
from nodwyn.testing import isolated_env


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment of a person's shell; on teardown every request of every session the test's
    commands recorded must replay to its recorded digest."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    yield isolated_env(tmp_path, PATH=os.environ.get("PATH", ""), WS=str(ws))
    store = Store(tmp_path / "home")
    for sid in store.ids():
        with store.open(sid) as log:
            refused = [(v.seq, str(v.error)) for v in verify_all(log) if v.error is not None]
        assert not refused, f"session {sid}: requests that do not replay: {refused}"
