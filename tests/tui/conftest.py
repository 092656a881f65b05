"""What the TUI tests share: a person's environment with a config pointing at a fake provider on
127.0.0.1 (as tests/cli/test_habits.py writes it), and the app driven by Textual's pilot. On
teardown every request of every session the test recorded must replay to its digest."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.replay.exact import verify_all


def call(name: str, cid: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "id": cid, "arguments": arguments}


def configure(env: dict[str, str], url: str, extra: str = "") -> None:
    Path(env["NODWYN_CONFIG"]).write_text(
        f"""[control]
model = "fake"

[models.fake]
api = "openai-chat"
model = "fake-model"
base_url = "{url}"
context_size = 32000
prices = {{ input = 2.0, output = 8.0, cached_input = 0.5 }}

[models.other]
api = "openai-chat"
model = "other-model"
base_url = "{url}"
context_size = 32000
{extra}"""
    )


def chat_bodies(fake: FakeServer) -> list[dict[str, Any]]:
    return [r.body for r in fake.requests if r.path.endswith("/chat/completions")]


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
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


async def until(pilot: Any, done: Callable[[], bool], timeout: float = 20.0, what: str = "") -> None:
    """Let the app run until ``done()`` holds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not done():
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {what or done}")
        await pilot.pause(0.05)


async def opened(pilot: Any) -> None:
    """Until the session is open for turns (a resume opens it on the worker thread)."""
    app = pilot.app
    await until(pilot, lambda: app.opened is not None and not app.busy, what="the session to open")


Waiter = Callable[[Any, Callable[[], bool]], Awaitable[None]]
