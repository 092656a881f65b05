"""The TUI driven by Textual's pilot against a fake provider on 127.0.0.1: what went over the wire
and into the log is asserted, not only what the screen shows."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.cli.test_habits import chat_bodies, configure
from tests.cli.test_run import call
from textual.widgets import Input, OptionList, Static

from nodwyn.cli.screen import shown
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.tui.app import NodwynApp
from nodwyn.tui.composer import Composer
from nodwyn.tui.conversation import _clip_lines
from nodwyn.tui.screens import ApprovalScreen, ModelScreen, PickerScreen

from .conftest import opened, until


def _app(env: dict[str, str], **kw: Any) -> NodwynApp:
    return NodwynApp(env=env, workspace=Path(env["WS"]), **kw)


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
            await opened(pilot)
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


# -- a whole tool-using session with approvals: once, for this session, declined --------------


@pytest.mark.needs("bwrap")
def test_tool_session_with_approvals_once_session_and_decline(env: dict[str, str]) -> None:
    asyncio.run(_approvals(env))


async def _approvals(env: dict[str, str]) -> None:
    ws = Path(env["WS"])
    script: list[dict[str, Any]] = [
        {"text": "Writing a note.", "calls": [call("shell", "s1", command="echo hi > note.txt")]},
        {"calls": [call("fs-edit", "e1", path="calc.py", old="return a - b", new="return a + b")]},
        {"calls": [call("fs-edit", "e2", path="calc.py", old="def add", new="def plus")]},
        {"calls": [call("shell", "s2", command="rm calc.py")]},
        {"text": "Done: add adds."},
    ]
    asked: list[str] = []
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        app = _app(env)
        async with app.run_test(size=(100, 30)) as pilot:
            await opened(pilot)
            app.query_one(Composer).text = "Fix add and tidy up"
            await pilot.press("enter")
            for key in ("y", "a", "n"):
                await until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what=f"approval for {key}")
                modal = app.screen
                asked.append(str(modal.query_one("#detail", Static).render()))
                await pilot.press(key)

                def closed(modal: object = modal) -> bool:
                    return app.screen is not modal

                await until(pilot, closed, what="the modal closed")
            await until(pilot, lambda: not app.busy, what="the turn's end")
            shown_text = _screen_text(app)
            sid = app.agent.session_id
        bodies = chat_bodies(fake)
    # once: the command ran; for this session: both edits ran, the second without asking; declined: not run
    assert (ws / "note.txt").read_text() == "hi\n"
    assert (ws / "calc.py").read_text() == "def plus(a, b):\n    return a + b\n"
    assert len(asked) == 3
    assert "$ echo hi > note.txt" in asked[0]
    assert "edit calc.py" in asked[1]
    assert "\n-return a - b\n+return a + b\n" in asked[1]  # the whole change, as a diff
    assert "$ rm calc.py" in asked[2]
    assert "Done: add adds." in shown_text
    assert len(bodies) == 5
    tool_msgs = [m for m in bodies[-1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["s1", "e1", "e2", "s2"]
    assert "declined" in tool_msgs[-1]["content"].lower()
    with Store(Path(env["NODWYN_HOME"])).open(sid) as log:
        results = [e.data for e in log.read(1) if e.kind == "tool.result"]
    assert [r["error"] for r in results] == [False, False, False, True]


# -- Esc cancels a running tool: its process ends, the app stays, the next turn goes on -----------


def _running(marker: str) -> bool:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False)
    return bool(found.stdout.split())


@pytest.mark.needs("bwrap")
def test_escape_cancels_a_running_tool_and_its_process_ends(env: dict[str, str]) -> None:
    asyncio.run(_cancel(env))


async def _cancel(env: dict[str, str]) -> None:
    ws = Path(env["WS"])
    script: list[dict[str, Any]] = [
        {"calls": [call("shell", "s1", command="touch pid; exec sleep 60.731")]},
        {"text": "Stopped; what next?"},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        app = _app(env, yes=True)
        async with app.run_test(size=(100, 30)) as pilot:
            await opened(pilot)
            app.query_one(Composer).text = "Wait a minute"
            await pilot.press("enter")
            await until(pilot, lambda: (ws / "pid").exists() and _running("60.731"), what="the command")
            started = time.monotonic()
            await pilot.press("escape")
            await until(pilot, lambda: not app.busy, timeout=10, what="the cancel")
            took = time.monotonic() - started
            assert app.is_running
            app.query_one(Composer).text = "Go on"
            await pilot.press("enter")
            await until(pilot, lambda: "Stopped; what next?" in _screen_text(app), what="the next turn")
            sid = app.agent.session_id
        bodies = chat_bodies(fake)
    assert took < 5
    end = time.monotonic() + 5
    while _running("60.731") and time.monotonic() < end:
        time.sleep(0.05)
    assert not _running("60.731")  # found by what it runs: a sandboxed pid names nothing here
    with Store(Path(env["NODWYN_HOME"])).open(sid) as log:
        events = list(log.read(1))
    result = next(e.data for e in events if e.kind == "tool.result")
    assert result["call_id"] == "s1" and result["error"] and "interrupted" in result["text"]
    tool_msgs = [m for m in bodies[1]["messages"] if m["role"] == "tool"]
    assert tool_msgs and "interrupted" in tool_msgs[0]["content"]


# -- a model switch from the model picker (Ctrl+O) and by /model NAME ----------------------------


def test_model_switch_from_the_picker_and_the_slash_command(env: dict[str, str]) -> None:
    asyncio.run(_switch(env))


async def _switch(env: dict[str, str]) -> None:
    script = [{"text": "one"}, {"text": "two"}, {"text": "three"}]
    with FakeServer(api="openai-chat", script=script, models=("fake-model", "other-model")) as fake:
        configure(env, fake.url)
        app = _app(env)
        async with app.run_test(size=(100, 30)) as pilot:
            await opened(pilot)
            app.query_one(Composer).text = "first"
            await pilot.press("enter")
            await until(pilot, lambda: not app.busy and "one" in _screen_text(app), what="turn 1")
            await pilot.press("ctrl+o")
            await until(pilot, lambda: isinstance(app.screen, ModelScreen), what="model picker")
            picker = app.screen
            assert isinstance(picker, ModelScreen)
            steps = picker.models.index("other") - picker.models.index("fake")
            await pilot.press(*["down"] * steps, "enter")
            await until(pilot, lambda: not app.busy and app.agent.model.name == "other", what="switch")
            app.query_one(Composer).text = "second"
            await pilot.press("enter")
            await until(pilot, lambda: not app.busy and "two" in _screen_text(app), what="turn 2")
            app.query_one(Composer).text = "/model fake"
            await pilot.press("enter")
            await until(pilot, lambda: not app.busy and app.agent.model.name == "fake", what="/model")
            app.query_one(Composer).text = "third"
            await pilot.press("enter")
            await until(pilot, lambda: not app.busy and "three" in _screen_text(app), what="turn 3")
            sid = app.agent.session_id
        bodies = chat_bodies(fake)
    assert [b["model"] for b in bodies] == ["fake-model", "other-model", "fake-model"]
    with Store(Path(env["NODWYN_HOME"])).open(sid) as log:
        switches = [e.data["model"] for e in log.read(1) if e.kind == "model.switch"]
    assert switches == ["other", "fake"]


# -- resume from the picker (Ctrl+R), searched ---------------------------------------------------


def test_resume_from_the_searchable_picker(env: dict[str, str]) -> None:
    asyncio.run(_resume(env))


async def _resume(env: dict[str, str]) -> None:
    script = [{"text": "The parser needs a fix."}, {"text": "Unrelated."}, {"text": "Fixed the parser."}]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        for task in ("Look at the parser", "Something else"):
            app = _app(env)
            async with app.run_test(size=(100, 30)) as pilot:
                await opened(pilot)
                app.query_one(Composer).text = task
                await pilot.press("enter")

                def answered(app: NodwynApp = app) -> bool:
                    return not app.busy and app.panel.agg.totals().all.replies == 1

                await until(pilot, answered, what=task)
        first, second = Store(Path(env["NODWYN_HOME"])).ids()[-2:]
        app = _app(env)
        async with app.run_test(size=(100, 30)) as pilot:
            await opened(pilot)
            fresh = app.agent.session_id
            await pilot.press("ctrl+r")
            await until(pilot, lambda: isinstance(app.screen, PickerScreen), what="the picker")
            options = app.screen.query_one(OptionList)
            assert options.option_count == 2  # the other sessions, not the open one
            await pilot.press(*"parser")
            await until(pilot, lambda: options.option_count == 1, what="the search")
            await pilot.press("enter")
            await until(pilot, lambda: app.agent.session_id == first, what="the resume")
            assert "Look at the parser" in _screen_text(app)
            app.query_one(Composer).text = "Now fix it"
            await pilot.press("enter")
            await until(pilot, lambda: not app.busy and "Fixed the parser." in _screen_text(app), what="turn")
        bodies = chat_bodies(fake)
    assert second != first and fresh not in (first, second)
    contents = [str(m.get("content")) for m in bodies[-1]["messages"]]
    assert any("Look at the parser" in c for c in contents)
    assert any("The parser needs a fix." in c for c in contents)
    with Store(Path(env["NODWYN_HOME"])).open(first) as log:
        kinds = [e.kind for e in log.read(1)]
    assert "session.resume" in kinds and kinds[-1] == "llm.resp"


# -- the pickers open at once, with an empty search; an unpriced model's cost is unknown ----------


def test_the_pickers_open_at_once_with_an_empty_search(env: dict[str, str]) -> None:
    asyncio.run(_at_once(env))


def _listed(picker: PickerScreen, count: int) -> Callable[[], bool]:
    return lambda: picker.picks is not None and picker.query_one(OptionList).option_count == count


async def _at_once(env: dict[str, str]) -> None:
    with FakeServer(api="openai-chat", script=[{"text": "Looked."}]) as fake:
        configure(env, fake.url)
        config = Path(env["NODWYN_CONFIG"])
        config.write_text(config.read_text().replace('model = "fake"', 'model = "other"', 1))  # no prices
        app = _app(env)
        async with app.run_test(size=(100, 30)) as pilot:
            await opened(pilot)
            assert "cost unknown" in str(app.panel.figures())  # before any reply, as after one
            app.query_one(Composer).text = "Look at the parser"
            await pilot.press("enter")
            await until(pilot, lambda: not app.busy and app.panel.agg.totals().all.replies == 1, what="turn")
            assert "cost unknown" in str(app.panel.figures()) and "$0.0000" not in str(app.panel.figures())
        app = _app(env)
        async with app.run_test(size=(100, 30)) as pilot:
            await opened(pilot)
            for keys in (["ctrl+r"], ["/resume"]):
                if keys == ["/resume"]:
                    app.query_one(Composer).text = "/resume"
                    keys = ["enter"]
                await pilot.press(*keys)
                screen = app.screen
                assert isinstance(screen, PickerScreen), keys  # no other key needed
                assert screen.query_one(Input).value == "", keys
                await until(pilot, _listed(screen, 1), what="the sessions listed")
                await pilot.press("escape")
                await until(pilot, lambda: not isinstance(app.screen, PickerScreen), what="closed")
            await pilot.press("ctrl+o")
            assert isinstance(app.screen, ModelScreen)
            await pilot.press("escape")
            app.query_one(Composer).text = "/resume parser"
            await pilot.press("enter")
            assert isinstance(app.screen, PickerScreen) and app.screen.query_one(Input).value == "parser"
            assert app.query_one(Composer).text == ""


# -- the help screen lists every key binding -----------------------------------------------------


def test_help_lists_every_binding(env: dict[str, str]) -> None:
    asyncio.run(_help(env))


async def _help(env: dict[str, str]) -> None:
    from textual.binding import Binding

    from nodwyn.tui.screens import HelpScreen

    with FakeServer(api="openai-chat", script=[]) as fake:
        configure(env, fake.url)
        app = _app(env)
        async with app.run_test(size=(100, 40)) as pilot:
            await opened(pilot)
            await pilot.press("f1")
            await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
            text = str(app.screen.query_one("#help", Static).render())
            for screen_binding in (ApprovalScreen.BINDINGS, PickerScreen.BINDINGS, ModelScreen.BINDINGS):
                assert screen_binding  # the dialogs' keys are listed under MORE_KEYS
    for b in NodwynApp.BINDINGS:
        assert isinstance(b, Binding)
        assert NodwynApp.KEY_HELP[b.action] in text, b.action
        for key in b.key.split(","):
            label = b.key_display or key.replace("ctrl+", "Ctrl+").replace("escape", "Esc").title()
            assert label in text, key
    for keys, what in NodwynApp.MORE_KEYS:
        assert keys in text and what in text
    for command in ("/model", "/plan", "/compact", "/resume", "/quit", "/help"):
        assert command in text


# -- Ctrl+C cancels a streaming request (the app stays); the panel's figures are the library's


def test_ctrl_c_cancels_a_streaming_request_and_the_panel_agrees_with_stats(env: dict[str, str]) -> None:
    asyncio.run(_cancel_request(env))


async def _cancel_request(env: dict[str, str]) -> None:
    from nodwyn.stats.totals import Aggregator

    script: list[dict[str, Any]] = [
        {"text": "First answer."},
        {"text": "This goes on\nand on", "stall": {"when": "drip", "interval": 0.05}},
        {"text": "Back again."},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        app = _app(env)
        async with app.run_test(size=(100, 30)) as pilot:
            await opened(pilot)
            for text, wait in (("one", "First answer."), ("two", "This goes on")):
                app.query_one(Composer).text = text
                await pilot.press("enter")

                def shows(wait: str = wait) -> bool:
                    return wait in _screen_text(app)

                await until(pilot, shows, what=wait)
            assert app.busy
            await pilot.press("ctrl+c")
            assert app.is_running
            await until(pilot, lambda: not app.busy, timeout=10, what="the cancel")
            app.query_one(Composer).text = "three"
            await pilot.press("enter")
            await until(pilot, lambda: not app.busy and "Back again." in _screen_text(app), what="turn 3")
            shown_totals = app.panel.agg.totals().all
            sid = app.agent.session_id
        bodies = chat_bodies(fake)
    assert len(bodies) == 3
    with Store(Path(env["NODWYN_HOME"])).open(sid) as log:
        events = list(log.read(1))
    kinds = [e.kind for e in events]
    assert kinds.count("llm.req") == 3 and kinds.count("llm.resp") == 2  # the cancelled one has none
    agg = Aggregator()
    agg.feed_all(events)
    whole = agg.totals().all
    assert (shown_totals.requests, shown_totals.replies) == (whole.requests, whole.replies) == (3, 2)
    assert shown_totals.prompt_tokens == whole.prompt_tokens and shown_totals.cost_usd == whole.cost_usd
    assert shown_totals.cache_rate == whole.cache_rate


# -- a result the window cut is drawn as the request sent it ------------------------------------


@pytest.mark.needs("bwrap")
def test_a_result_the_window_cut_is_shown_as_sent(env: dict[str, str]) -> None:
    asyncio.run(_cut(env))


async def _cut(env: dict[str, str]) -> None:
    script: list[dict[str, Any]] = [
        {"calls": [call("shell", "s1", command="seq 1 40000")]},
        {"text": "Counted."},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        app = _app(env, yes=True)
        async with app.run_test(size=(100, 30)) as pilot:
            await opened(pilot)
            app.query_one(Composer).text = "count"
            await pilot.press("enter")
            await until(pilot, lambda: not app.busy and "Counted." in _screen_text(app), what="the turn")
            item = app.conversation.tools["s1"]
            title = str(item.title)
            item.collapsed = False
            await pilot.pause()
            drawn = str(item.body.render())
        bodies = chat_bodies(fake)
    sent = next(m["content"] for m in bodies[1]["messages"] if m["role"] == "tool")
    assert item.text is not None and len(sent) < len(item.text)  # the window cut it
    assert item.as_sent is not None and item.as_sent[1] == sent  # what went over the wire
    assert "cut as request" in title
    assert drawn == _clip_lines(shown(sent))  # drawn as sent (the screen's own line limit after)


# -- the input: multi-line, history, completion of /commands and @paths ------------------------------


def test_the_input_edits_lines_keeps_history_and_completes(env: dict[str, str]) -> None:
    asyncio.run(_composer(env))


async def _composer(env: dict[str, str]) -> None:
    (Path(env["WS"]) / "src").mkdir()
    (Path(env["WS"]) / "src" / "parser.py").write_text("")
    script = [{"text": "got two lines"}, {"text": "again"}]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        app = _app(env)
        async with app.run_test(size=(100, 30)) as pilot:
            await opened(pilot)
            composer = app.query_one(Composer)
            await pilot.press(*"first line", "ctrl+j", *"second line", "enter")
            await until(pilot, lambda: not app.busy and "got two lines" in _screen_text(app), what="turn 1")
            await pilot.press("up")
            assert composer.text == "first line\nsecond line"  # history
            composer.clear()
            await pilot.press(*"/comp", "tab")
            assert composer.text == "/compact"
            composer.clear()
            await pilot.press(*"look at @sr", "tab", *"pa", "tab")
            assert composer.text == "look at @src/parser.py"
            await pilot.press("enter")
            await until(pilot, lambda: not app.busy and "again" in _screen_text(app), what="turn 2")
        bodies = chat_bodies(fake)
    assert bodies[0]["messages"][-1]["content"].endswith("first line\nsecond line")
    assert bodies[1]["messages"][-1]["content"].endswith("look at @src/parser.py")


def test_an_unknown_session_ends_the_app_with_its_error(env: dict[str, str]) -> None:
    from nodwyn.errors import NotFoundError

    async def go() -> NodwynApp:
        app = _app(env, resume="nosuchsession")
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
        return app

    with FakeServer(api="openai-chat", script=[]) as fake:
        configure(env, fake.url)
        app = asyncio.run(go())
    assert isinstance(app.failed, NotFoundError) and app.return_code == NotFoundError.exit_code
