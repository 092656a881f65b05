"""``nodwyn mcp list`` / ``nodwyn mcp test NAME`` and the banner of a session with MCP servers and an
AGENTS.md, as a person runs them: the real CLI in a process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from nodwyn.fakes import FakeServer

from .test_run import NODWYN, call, nodwyn

CALC = Path(__file__).parents[1] / "mcp_tools" / "calc_server.py"


def _config(env: dict[str, str], url: str = "http://127.0.0.1:9") -> None:
    Path(env["NODWYN_CONFIG"]).write_text(
        f"""[control]
model = "chat"

[models.chat]
api = "openai-chat"
model = "fake-model"
base_url = "{url}"
context_size = 32000

[mcp.calc]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(CALC))}]
start_timeout = 120

[mcp.gone]
command = "/nonexistent/server"

[mcp.off]
command = "/nonexistent/other"
enabled = false
"""
    )


@pytest.mark.needs("bwrap")
def test_mcp_list_shows_each_server_its_status_and_tools(env: dict[str, str]) -> None:
    _config(env)
    done = nodwyn(env, "mcp", "list")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("calc             stdio  ok       ")
    assert lines[1].startswith("    calc 1.0 · 10 tools · ")
    assert "    mcp__calc__add" in lines
    gone = next(i for i, line in enumerate(lines) if line.startswith("gone "))
    assert lines[gone].startswith("gone             stdio  error    /nonexistent/server")
    assert lines[gone + 1] == (
        f"    mcp server gone: cannot run '/nonexistent/server' (No such file or directory); "
        f"fix command in {env['NODWYN_CONFIG']} [mcp.gone]"
    )
    assert any(line.startswith("off              stdio  disabled") for line in lines)
    docs = [json.loads(line) for line in nodwyn(env, "mcp", "list", "--json").stdout.splitlines()]
    assert [(d["name"], d["status"]) for d in docs] == [
        ("calc", "ok"),
        ("gone", "error"),
        ("off", "disabled"),
    ]


@pytest.mark.needs("bwrap")
def test_mcp_test_name_exits_non_zero_with_the_reason(env: dict[str, str]) -> None:
    _config(env)
    ok = nodwyn(env, "mcp", "test", "calc")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("calc: ok · calc 1.0 · 10 tools · ")
    bad = nodwyn(env, "mcp", "test", "off")  # a disabled entry is started when asked by name
    assert bad.returncode == 11
    assert bad.stderr.strip().endswith(
        "mcp server off: cannot run '/nonexistent/other' (No such file or directory); "
        f"fix command in {env['NODWYN_CONFIG']} [mcp.off]"
    )
    unknown = nodwyn(env, "mcp", "test", "nope")
    assert (
        unknown.returncode == 2
        and "no MCP server 'nope' is configured (known: calc, gone, off)" in unknown.stderr
    )


@pytest.mark.needs("bwrap")
def test_the_banner_says_what_instructions_and_servers_the_session_loaded(env: dict[str, str]) -> None:
    Path(env["WS"], "AGENTS.md").write_text("Always answer in French.\n" * 90)
    with FakeServer(api="openai-chat", script=[{"text": "bonjour"}, {"text": "salut"}]) as fake:
        _config(env, fake.url)
        done = nodwyn(env, "run", "hello")
        plain = nodwyn(env, "run", "hello", "--no-project-doc")
        systems = [r.body["messages"][0]["content"] for r in fake.requests]
    assert done.returncode == 0, done.stderr
    assert "[instructions: AGENTS.md, 2.2 KB]" in done.stderr.splitlines()
    assert "[mcp: calc (10 tools)]" in done.stderr.splitlines()
    assert any(line.startswith("nodwyn: mcp server gone: cannot run") for line in done.stderr.splitlines())
    assert "Always answer in French." in systems[0] and "French" not in systems[1]
    assert "[instructions:" not in plain.stderr


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _group(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid``."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out


@pytest.mark.needs("bwrap")  # the server runs under it
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_mid_call_ends_the_session_and_the_servers_process_group(
    env: dict[str, str], sig: signal.Signals
) -> None:
    """SIGTERM (and Ctrl-C, SIGINT) while an MCP call runs: nodwyn exits, and the server's process
    group (bwrap, the sandboxed server under it) is gone with it."""
    script: list[dict[str, Any]] = [
        {"calls": [call("mcp__calc__slow", "s1", seconds=120)]},
        {"text": "never"},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        _config(env, fake.url)
        path = Path(env["NODWYN_CONFIG"])
        path.write_text(path.read_text().replace("[mcp.gone]", 'approve = "auto"\n\n[mcp.gone]', 1))
        proc = subprocess.Popen(
            [*NODWYN, "run", "go"], env=env, cwd=env["WS"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            deadline = time.monotonic() + 90
            while not fake.requests and time.monotonic() < deadline:
                time.sleep(0.1)
            servers = [c for c in _children(proc.pid) if os.getpgid(c) == c]
            assert len(servers) == 1, servers  # calc (gone did not start, off is disabled)
            (server,) = servers
            assert Path(f"/proc/{server}/cmdline").read_bytes().split(b"\0")[0].endswith(b"bwrap")
            time.sleep(1.0)  # the call is running
            assert len(_group(server)) >= 1
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode != 0, err
    assert _group(server) == [], err
