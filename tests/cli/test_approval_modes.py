"""The approval modes through the real CLI on a pseudo-terminal (ADR 0353): `ask` asks for writes
and commands, `auto-edit` writes without asking and asks for commands, `full-auto` (`--yes`) asks
for nothing; every command's question names its sandbox. Line mode (`nodwyn run`) and the TUI
(`nodwyn tui`). Also issue 21 item 4: at 80 columns a command padded with 3,000 blanks shows its
start, its blank runs counted and its length."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.values.events import TOOL_RESULT, SessionStart, ToolResult, decode

from .test_chat import Terminal
from .test_run import call, configure, nodwyn

WRITE = call("fs-write", "w1", path="made.txt", content="written\n")
SHELL = call("shell", "s1", command="touch ran.txt")


def _results(env: dict[str, str]) -> tuple[SessionStart, list[ToolResult]]:
    store = Store(Path(env["NODWYN_HOME"]))
    (sid,) = store.ids()
    with store.open(sid) as log:
        events = list(log.read())
    start = decode(events[0])
    assert isinstance(start, SessionStart)
    results = [r for r in (decode(e) for e in events if e.kind == TOOL_RESULT) if isinstance(r, ToolResult)]
    return start, results


def _line_run(env: dict[str, str], *args: str, answers: list[str]) -> Terminal:
    script: list[dict[str, Any]] = [{"calls": [WRITE]}, {"calls": [SHELL]}, {"text": "Done."}]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        with Terminal(env, "run", "Make a file, then run a command.", *args) as term:
            for answer in answers:
                term.expect("[y/N]")
                term.type(answer + "\r")
            term.expect("Done.")
            assert term.close() == 0
        assert "[y/N]" not in term.text[term.seen :]  # asked no more than expected
    return term


@pytest.mark.needs("bwrap")
def test_ask_asks_for_the_write_and_the_command(env: dict[str, str]) -> None:
    term = _line_run(env, answers=["n", "y"])
    assert "allow fs-write" in term.text
    assert "shell (sandbox workspace-write, no network):" in term.text
    assert not Path(env["WS"], "made.txt").exists() and Path(env["WS"], "ran.txt").exists()
    start, results = _results(env)
    assert start.approval == "ask" and start.sandbox == "workspace-write" and start.network is False
    assert [r.sandbox for r in results] == [None, "workspace-write"]
    log = nodwyn(env, "log", "latest").stdout
    assert "session.start   [sandbox workspace-write]" in log
    assert "tool.result     [sandbox workspace-write]" in log
    stats = nodwyn(env, "stats", "latest").stdout
    assert "Sandbox                 workspace-write  (shell commands: 1 under workspace-write)" in stats


@pytest.mark.needs("bwrap")
def test_auto_edit_writes_without_asking_and_asks_for_the_command(env: dict[str, str]) -> None:
    term = _line_run(env, "--approval", "auto-edit", answers=["n"])
    assert "allow fs-write" not in term.text and "shell (sandbox workspace-write" in term.text
    assert Path(env["WS"], "made.txt").read_text() == "written\n"
    assert not Path(env["WS"], "ran.txt").exists()
    start, results = _results(env)
    assert start.approval == "auto-edit"
    assert results[1].error and "declined" in results[1].text


@pytest.mark.needs("bwrap")
def test_full_auto_asks_for_nothing(env: dict[str, str]) -> None:
    term = _line_run(env, "--yes", answers=[])
    assert "approval full-auto" in term.text  # the banner
    assert Path(env["WS"], "made.txt").exists() and Path(env["WS"], "ran.txt").exists()
    assert _results(env)[0].approval == "full-auto"


@pytest.mark.needs("bwrap")
def test_read_only_sandbox_is_named_in_the_question(env: dict[str, str]) -> None:
    term = _line_run(env, "--approval", "auto-edit", "--sandbox", "read-only", answers=["y"])
    assert "shell (sandbox read-only, no network):" in term.text
    assert not Path(env["WS"], "ran.txt").exists()  # it ran, read-only
    _, results = _results(env)
    assert results[1].sandbox == "read-only" and "Read-only file system" in results[1].text


@pytest.mark.needs("bwrap")
def test_a_command_padded_with_blanks_shows_what_runs(env: dict[str, str]) -> None:
    """Issue 21, item 4: `touch X ;` + 3,000 spaces, 3,000 U+3000 and U+2800 + `echo building
    docs`, at 80x24: the start, every blank run and the length are on screen; y runs it."""
    command = "touch X ;" + " " * 3000 + "\u3000" * 3000 + "\u2800" * 5 + "echo building docs"
    script: list[dict[str, Any]] = [{"calls": [call("shell", "s1", command=command)]}, {"text": "Done."}]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        with Terminal(env, "run", "Build the docs.", columns=80, lines=24) as term:
            term.expect("[y/N]")
            shown = term.text
            term.type("n\r")
            term.expect("Done.")
    assert f"{len(command):,} characters" in shown
    flat = shown.replace("\r\n  ", "").replace("\n  ", "")
    assert "touch X ;⟨3000 spaces⟩⟨U+3000 ×3000⟩⟨U+2800 ×5⟩echo building docs" in flat
    question = shown[shown.rindex("allow shell") :]
    assert question.startswith("allow shell `touch X ;⟨3000 spaces⟩")


def _tui(env: dict[str, str], *args: str) -> tuple[Terminal, FakeServer]:
    script: list[dict[str, Any]] = [{"calls": [WRITE]}, {"calls": [SHELL]}, {"text": "All done."}]
    fake = FakeServer(api="openai-chat", script=script)
    fake.__enter__()
    configure(env, fake.url)
    term = Terminal(env, "tui", *args, columns=160, lines=48)
    return term, fake


@pytest.mark.needs("bwrap")
def test_tui_auto_edit_asks_only_for_the_command_and_names_its_sandbox(env: dict[str, str]) -> None:
    term, fake = _tui(env, "--approval", "auto-edit")
    try:
        term.expect("sandbox workspace-write · auto-edit")  # the status line (at 160 columns)
        term.type("Make a file, then run a command.\r")
        term.expect("runs in: sandbox workspace-write, no network")
        term.type("n")
        term.expect("All done.")
        term.type("\x11")  # Ctrl-Q
    finally:
        term.close()
        fake.__exit__(None, None, None)
    assert Path(env["WS"], "made.txt").read_text() == "written\n"
    assert not Path(env["WS"], "ran.txt").exists()
    sent = json.dumps([r.body for r in fake.requests])
    assert "declined: shell" in sent


@pytest.mark.needs("bwrap")
def test_tui_ask_asks_for_the_write_too(env: dict[str, str]) -> None:
    term, fake = _tui(env)
    try:
        term.expect("sandbox workspace-write · ask")
        term.type("Make a file, then run a command.\r")
        term.expect("Allow this?")
        term.type("y")  # the write
        term.expect("runs in: sandbox workspace-write, no network")
        term.type("y")  # the command
        term.expect("All done.")
        term.type("\x11")
    finally:
        term.close()
        fake.__exit__(None, None, None)
    assert Path(env["WS"], "made.txt").exists() and Path(env["WS"], "ran.txt").exists()
    start, results = _results(env)
    assert start.approval == "ask" and results[1].sandbox == "workspace-write"
