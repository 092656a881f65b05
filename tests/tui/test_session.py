"""The TUI driven by Textual's pilot against a fake provider on 127.0.0.1: what went over the wire
and into the log is asserted, not only what the screen shows."""

from __future__ import annotations

import asyncio
from pathlib import Path

from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.tui.app import NodwynApp
from nodwyn.tui.composer import Composer

from .conftest import chat_bodies, configure, until


def _app(env: dict[str, str], **kw: object) -> NodwynApp:
    return NodwynApp(env=env, workspace=Path(env["WS"]), **kw)  # type: ignore[arg-type]


def _screen_text(app: NodwynApp) -> str:
    from textual.widgets import Static

    return "\n".join(str(w.render()) for w in app.conversation.query(Static))


def test_a_turn_streams_and_lands_in_the_log(env: dict[str, str]) -> None:
    asyncio.run(_a_turn(env))


async def _a_turn(env: dict[str, str]) -> None:
    with FakeServer(
        api="openai-chat", script=[{"text": "It subtracts.\nUse a + b.", "thinking": "look"}]
    ) as fake:
        configure(env, fake.url)
        app = _app(env)
        async with app.run_test(size=(100, 30)) as pilot:
            composer = app.query_one(Composer)
            composer.text = "What does add do?"
            await pilot.press("enter")
            await until(pilot, lambda: not app.busy and "Use a + b." in _screen_text(app), what="the reply")
            sid = app.agent.session_id
        bodies = chat_bodies(fake)
    assert len(bodies) == 1
    assert bodies[0]["messages"][-1]["content"].endswith("What does add do?")
    with Store(Path(env["NODWYN_HOME"])).open(sid) as log:
        kinds = [e.kind for e in log.read(1)]
    assert kinds[-3:] == ["user.msg", "llm.req", "llm.resp"]
