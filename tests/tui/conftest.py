"""What the TUI tests share: a person's environment with a config pointing at a fake provider on
127.0.0.1 (as tests/cli/test_habits.py writes it), and the app driven by Textual's pilot. On
teardown every request of every session the test recorded must replay to its digest."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

# The CLI tests' person's environment (its teardown checks every request replays), config writer
# and call helper, shared rather than written again (the tests import the helpers from there).
from tests.cli.conftest import env as env


async def until(pilot: Any, done: Callable[[], bool], timeout: float = 30.0, what: str = "") -> None:
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
