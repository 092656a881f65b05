"""What the CLI tests share: a person's shell environment whose sessions must replay."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodwyn.log import Store
from nodwyn.replay.exact import verify_all


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment of a person's shell; on teardown every request of every session the test's
    commands recorded must replay to its recorded digest."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    yield {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "NODWYN_HOME": str(tmp_path / "home"),
        "NODWYN_CONFIG": str(tmp_path / "config.toml"),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "WS": str(ws),
    }
    store = Store(tmp_path / "home")
    for sid in store.ids():
        with store.open(sid) as log:
            refused = [(v.seq, str(v.error)) for v in verify_all(log) if v.error is not None]
        assert not refused, f"session {sid}: requests that do not replay: {refused}"
