"""Every fault of an MCP server is one line naming the server, and the session goes on: a server that
will not start, hangs, exits or is killed mid-call, writes what is not JSON-RPC, answers 100 MB,
offers a schema that is not JSON Schema or a name that clashes; a call that outlives its timeout;
Ctrl-C. Its stderr goes to a redacted file in the session's folder; it ends with the session."""

from __future__ import annotations

import _thread
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp.types import TextContent

from nodwyn.agent.sandbox import Sandbox, unavailable
from nodwyn.errors import ToolError
from nodwyn.mcp import Hub, ServerConfig, Started, make_tools
from nodwyn.mcp.config import server_from_table
from nodwyn.mcp.launch import UNCONFINED, own_folders
from nodwyn.mcp.results import MAX_RESULT_BYTES, outcome_of
from nodwyn.mcp.stdio import MAX_MESSAGE

from .helpers import CALC, SLOW_START, calc, call, session

RAW = Path(__file__).with_name("raw_server.py")


def entry(name: str, *flags: str, **keys: object) -> ServerConfig:
    """The calc server; its start may take ``SLOW_START`` s (importing the SDK on a busy machine)."""
    table = {"command": sys.executable, "args": [str(CALC), *flags], "start_timeout": SLOW_START, **keys}
    return server_from_table(name, table, Path("t"))


BOX = Sandbox(program=shutil.which("bwrap"))
CONFINED = BOX if unavailable(BOX) is None else UNCONFINED  # where bwrap cannot run, the tests still do


@pytest.fixture
def hub(workspace: Path) -> Iterator[Hub]:
    """A hub of its own, unconfined: these tests kill, read and mark the server's real process."""
    h = Hub(env=os.environ, sandbox=UNCONFINED, workspace=workspace)
    try:
        yield h
    finally:
        h.close()


@dataclass(frozen=True, slots=True, kw_only=True)
class Shared:
    hub: Hub
    started: list[Started]  # what its start gave, in the order of the servers


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    """One hub for the tests that leave its servers as they found them, started once (CI time),
    its stdio servers in the sandbox a session gives them by default: the calc server, the calc
    server with two tools whose names sanitise to one, and two servers whose schemas are bad."""
    ws = tmp_path_factory.mktemp("shared-ws")
    h = Hub(env=os.environ, sandbox=CONFINED, workspace=ws)
    raw = [sys.executable, str(RAW)]
    started = h.start(
        [
            entry("calc"),
            entry("clash", "--clash"),
            server_from_table("raw", {"command": raw[0], "args": [raw[1], "schema"]}, Path("t")),
            server_from_table("scalar", {"command": raw[0], "args": [raw[1], "scalar"]}, Path("t")),
        ]
    )
    try:
        yield Shared(hub=h, started=started)
    finally:
        h.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is gone for our purposes
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_a_server_that_will_not_start_or_hangs_is_one_line_and_the_others_start(workspace: Path) -> None:
    hub = Hub(env=os.environ, sandbox=CONFINED, workspace=workspace)  # the same lines in the sandbox
    try:
        _will_not_start_or_hangs(hub)
    finally:
        hub.close()


def _will_not_start_or_hangs(hub: Hub) -> None:
    missing = server_from_table("gone", {"command": "/nonexistent/mcp-server"}, Path("cfg.toml"))
    hung = entry("hung", "--hang-start", start_timeout=2)
    t0 = time.monotonic()
    gone, stuck, fine = hub.start([missing, hung, entry("calc")])
    assert gone.error == (
        "mcp server gone: cannot run '/nonexistent/mcp-server' (No such file or directory); "
        "fix command in cfg.toml [mcp.gone]"
    )
    assert stuck.error is not None and stuck.error.startswith(
        "mcp server hung: no answer to initialize and tools/list within 2 s (start_timeout in t [mcp.hung])"
    )
    assert stuck.seconds < 2 + 7  # the deadline, then the SDK's bounded shutdown
    assert fine.error is None and "add" in [t.name for t in fine.tools]
    assert time.monotonic() - t0 < SLOW_START + 10  # the hung one held nothing up
    with pytest.raises(ToolError, match="mcp server hung is not running"):
        hub.call("hung", "add", {"a": 1, "b": 1}, timeout=5)
    echoed = hub.call("calc", "echo", {"text": "on"}, timeout=20).content[0]
    assert isinstance(echoed, TextContent) and echoed.text == "on"


def test_a_server_killed_mid_call_gives_a_tool_error_well_within_the_calls_timeout(
    hub: Hub, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pid"
    (started,) = hub.start([entry("calc", "--pidfile", str(pidfile))])
    assert started.error is None
    pid = int(pidfile.read_text())
    threading.Timer(1.0, os.kill, (pid, signal.SIGKILL)).start()
    t0 = time.monotonic()
    with pytest.raises(ToolError) as caught:
        hub.call("calc", "slow", {"seconds": 60}, timeout=30)
    assert time.monotonic() - t0 < 10
    assert str(caught.value).startswith("mcp server calc: slow: the server closed the connection")
    with pytest.raises(ToolError, match="mcp server calc"):
        hub.call("calc", "add", {"a": 1, "b": 2}, timeout=5)


def test_a_server_that_exits_mid_call(hub: Hub) -> None:
    hub.start([entry("calc")])
    t0 = time.monotonic()
    with pytest.raises(ToolError, match="^mcp server calc: die: the server closed the connection"):
        hub.call("calc", "die", {}, timeout=30)
    assert time.monotonic() - t0 < 10


@pytest.mark.parametrize("mode", ["text", "json"])
def test_what_is_not_json_rpc_on_stdout_fails_the_call_at_once_and_is_noted(hub: Hub, mode: str) -> None:
    raw = server_from_table("raw", {"command": sys.executable, "args": [str(RAW), mode]}, Path("t"))
    (started,) = hub.start([raw])
    assert started.error is None, started.error
    t0 = time.monotonic()
    with pytest.raises(ToolError, match="^mcp server raw: poke: wrote what is not JSON-RPC to stdout"):
        hub.call("raw", "poke", {}, timeout=30)
    assert time.monotonic() - t0 < 10
    (note,) = hub.notes()
    assert note.startswith("mcp server raw wrote what is not JSON-RPC to stdout")


def test_a_call_that_outlives_its_timeout_is_an_error_after_it(shared: Shared) -> None:
    hub = shared.hub
    t0 = time.monotonic()
    with pytest.raises(
        ToolError, match=r"^mcp server calc: slow: no answer after 1 s \(the call's timeout\)$"
    ):
        hub.call("calc", "slow", {"seconds": 30}, timeout=1)
    assert 1 <= time.monotonic() - t0 < 6


def test_progress_lines_reach_the_caller_thread(shared: Shared) -> None:
    hub = shared.hub
    lines: list[str] = []
    hub.call("calc", "slow", {"seconds": 0.5}, timeout=20, on_progress=lines.append)
    assert lines == [f"calc: slow {i}/10 step {i}" for i in range(1, 11)]


def test_ctrl_c_cancels_the_request_on_the_server(hub: Hub, tmp_path: Path) -> None:
    hub.start([entry("calc", "--marks", str(tmp_path))])
    threading.Timer(1.0, _thread.interrupt_main).start()
    with pytest.raises(KeyboardInterrupt):
        hub.call("calc", "slow", {"seconds": 30}, timeout=60)
    deadline = time.monotonic() + 10
    while not (tmp_path / "cancelled").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (tmp_path / "cancelled").read_text() == "cancelled"  # notifications/cancelled arrived


def test_a_100_mb_result_is_capped(shared: Shared) -> None:
    """A message past the transport's cap fails its call with a line (and the server goes on); a
    result under it is cut to ``MAX_RESULT_BYTES`` before the log."""
    hub = shared.hub
    t0 = time.monotonic()
    with pytest.raises(
        ToolError, match=f"^mcp server calc: big: answered with a message of more than {MAX_MESSAGE}"
    ):
        hub.call("calc", "big", {"mb": 100}, timeout=120)
    assert time.monotonic() - t0 < 60
    (note,) = [n for n in hub.notes() if n.startswith("mcp server calc ")]
    assert note == f"mcp server calc sent a message of more than {MAX_MESSAGE} bytes; it was left out"
    outcome = outcome_of(hub.call("calc", "big", {"mb": 3}, timeout=60), None)
    assert outcome.text.endswith(
        f"[the result was {3 * 1024 * 1024} bytes; the first {MAX_RESULT_BYTES} are kept]"
    )
    assert len(outcome.text.encode()) < MAX_RESULT_BYTES + 100


def test_a_schema_that_is_not_json_schema_and_a_clashing_name_leave_those_tools_out(shared: Shared) -> None:
    started = shared.started[1:]
    assert started[2].error == (
        "mcp server scalar: its ListToolsResult is not what MCP says at tools.1.inputSchema.type: "
        "Input should be 'object'"
    )
    made = make_tools(shared.hub, started, tool_timeout=10, taken={"mcp__clash__echo"})
    assert "mcp__raw__poke" in made.tools and "mcp__clash__add" in made.tools
    assert not {"mcp__raw__broken", "mcp__clash__echo"} & set(made.tools)
    said = "\n".join(made.messages)
    assert (
        "mcp server raw: tool 'broken': inputSchema is not valid JSON Schema at properties/a/type: " in said
    )
    assert "mcp server clash: tool 'echo' left out: its name mcp__clash__echo clashes with" in said
    dotted = [n for n in made.tools if n.startswith("mcp__clash__a_b")]
    assert len(dotted) == 2 and len(set(dotted)) == 2  # "a.b" and "a b": two names, neither lost


def test_in_a_session_a_broken_server_is_a_notice_its_stderr_is_redacted_and_servers_end_with_it(
    tmp_path: Path, workspace: Path
) -> None:
    pidfile = tmp_path / "pid"
    steps = [call("mcp__calc__add", a=1, b=2), {"text": "3"}]
    broken = '[mcp.broken]\ncommand = "/nonexistent/server"\n'
    entry = calc("calc", "--pidfile", str(pidfile), approve="auto", sandbox="off")  # its real pid
    with session(tmp_path, workspace, steps, entry, broken) as run, run.open() as opened:
        pid = int(pidfile.read_text())
        assert opened.agent.user_turn("add").text == "3"
        folder = opened.agent.log.path
    notices = run.shown.notices
    assert any(n.startswith("mcp server broken: cannot run '/nonexistent/server'") for n in notices)
    assert any(n.endswith("the session goes on without its tools") for n in notices)
    stderr = (folder / "mcp-calc.stderr").read_text()
    assert "adding 1 2" in stderr and "sk-ant-api03-" + "x" * 40 not in stderr
    assert not _alive(pid)
    assert run.results()[0]["text"] == "3"


@pytest.mark.needs("bwrap")
def test_a_server_whose_files_are_under_tmp_starts_in_the_sandbox(tmp_path: Path, workspace: Path) -> None:
    """The sandbox's /tmp is private: a server installed under /tmp (a clone of a project there, its
    virtualenv, its node_modules) was hidden from itself and did not start. Its top folder under /tmp
    is bound again, read-only (ADR 0422)."""
    home = tmp_path / "srv"
    home.mkdir()
    script = home / "raw_server.py"
    script.write_text(RAW.read_text())
    top = Path("/tmp", *tmp_path.parts[2:3])
    found = own_folders((sys.executable, str(script), "ok"), None)  # the interpreter too, if under /tmp
    assert top in found and all(folder.parent == Path("/tmp") for folder in found)
    assert own_folders(("/usr/bin/python3", "relative.py", "/tmp"), None) == ()
    h = Hub(env=os.environ, sandbox=BOX, workspace=workspace)
    try:
        table = {"command": sys.executable, "args": [str(script)]}
        (started,) = h.start([server_from_table("under", table, Path("t"))])
        assert started.error is None and [t.name for t in started.tools] == ["poke"]
        assert h.call("under", "poke", {}, timeout=20).content
    finally:
        h.close()
