"""SVG snapshots of the main screens (pytest-textual-snapshot): the conversation with its cache
panel, an approval, the session picker and the help screen at 80x24, and the conversation wide.
The sessions shown are recorded through the real agent against the fake, then given fixed ids so
the pictures do not change from run to run. Update on purpose with ``--snapshot-update``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.cli.test_habits import configure
from tests.cli.test_run import call

from nodwyn.compose.setup import open_agent
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.tui.app import NodwynApp
from nodwyn.tui.composer import Composer
from nodwyn.tui.screens import ApprovalScreen, PickerScreen

from .conftest import opened, until

# the recorded session runs a shell command in its sandbox, and the status line names the sandbox
pytestmark = pytest.mark.needs("bwrap")

SHOWN = "20260101T090000Z-0000c0de"
OTHER = "20251231T180000Z-0000beef"


def _record(env: dict[str, str], url: str, task: str, script: list[dict[str, Any]], sid: str) -> None:
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        opened = open_agent(env=env, workspace=Path(env["WS"]), yes=True)
        try:
            opened.agent.user_turn(task)
            made = opened.agent.session_id
        finally:
            opened.close()
    sessions = Store(Path(env["NODWYN_HOME"])).sessions
    (sessions / made).rename(sessions / sid)
    configure(env, url)


@pytest.fixture
def recorded(env: dict[str, str]) -> Iterator[tuple[dict[str, str], FakeServer]]:
    """Two sessions with fixed ids, and a fake that answers the next turn with a shell call."""
    plan = "1. read calc.py\n2. fix add\n3. run the tests"
    shown: list[dict[str, Any]] = [
        {
            "thinking": "The user wants add checked; read it first.",
            "calls": [call("plan-write", "p1", plan=plan)],
        },
        {"text": "Reading it.", "calls": [call("fs-read", "r1", path="calc.py")]},
        {"text": "add subtracts: `a - b` should be `a + b`. Shall I fix it and run the tests?"},
    ]
    other = [{"text": "The parser handles nested lists."}]
    with FakeServer(
        api="openai-chat", script=[{"calls": [call("shell", "s1", command="pytest -q tests/")]}]
    ) as next_turn:
        _record(env, next_turn.url, "Does the parser handle nested lists?", other, OTHER)
        _record(env, next_turn.url, "Check add in calc.py and fix it", shown, SHOWN)
        yield env, next_turn


def _app(env: dict[str, str]) -> NodwynApp:
    latest = max(i.last or i.start for i in Store(Path(env["NODWYN_HOME"])).list())
    at = datetime.fromisoformat(latest.replace("Z", "+00:00")) + timedelta(hours=2, seconds=5)
    return NodwynApp(env=env, workspace=Path(env["WS"]), resume=SHOWN, clock=lambda: at)


async def _steady(pilot: Any) -> None:
    """The composer's cursor drawn without blinking, so a picture does not depend on the moment."""
    pilot.app.query_one(Composer).cursor_blink = False
    await opened(pilot)
    await pilot.pause()


async def _approval(pilot: Any) -> None:
    app = pilot.app
    await _steady(pilot)
    app.query_one(Composer).text = "Yes, fix it and run the tests"
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the approval")


async def _picker(pilot: Any) -> None:
    await _steady(pilot)
    await pilot.press("ctrl+r")
    await until(pilot, lambda: isinstance(pilot.app.screen, PickerScreen), what="the picker")
    await until(pilot, lambda: pilot.app.screen.picks is not None, what="the sessions listed")
    search = pilot.app.screen.query_one("#query")
    search.cursor_blink = False  # the cursor drawn steadily, whenever the picture is taken
    await pilot.pause()


def test_conversation_80x24(recorded: Any, snap_compare: Any) -> None:
    assert snap_compare(_app(recorded[0]), terminal_size=(80, 24), run_before=_steady)


def test_conversation_and_cache_panel_wide(recorded: Any, snap_compare: Any) -> None:
    assert snap_compare(_app(recorded[0]), terminal_size=(150, 40), run_before=_steady)


def test_approval_80x24(recorded: Any, snap_compare: Any) -> None:
    assert snap_compare(_app(recorded[0]), terminal_size=(80, 24), run_before=_approval)


def test_picker_80x24(recorded: Any, snap_compare: Any) -> None:
    assert snap_compare(_app(recorded[0]), terminal_size=(80, 24), run_before=_picker)


def test_help_80x24(recorded: Any, snap_compare: Any) -> None:
    assert snap_compare(_app(recorded[0]), terminal_size=(80, 24), press=["f1"], run_before=_steady)


_COLOUR = re.compile(r"fill:\s*#([0-9a-f]{6})", re.I)


def test_no_color_draws_in_greys_only(recorded: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """With NO_COLOR set every fill of the picture is a grey (r = g = b); without it, some are not."""
    from textual._doc import take_svg_screenshot

    def fills(svg: str) -> set[str]:
        return {m.lower() for m in _COLOUR.findall(svg)}

    def grey(hexa: str) -> bool:  # the SVG's own terminal theme draws text in c5c8c6
        r, g, b = (int(hexa[i : i + 2], 16) for i in (0, 2, 4))
        return max(r, g, b) - min(r, g, b) <= 8

    coloured = take_svg_screenshot(app=_app(recorded[0]), terminal_size=(80, 24), run_before=_steady)
    assert any(not grey(f) for f in fills(coloured))
    monkeypatch.setenv("NO_COLOR", "1")
    plain = take_svg_screenshot(app=_app(recorded[0]), terminal_size=(80, 24), run_before=_steady)
    assert fills(plain) and [f for f in fills(plain) if not grey(f)] == []
