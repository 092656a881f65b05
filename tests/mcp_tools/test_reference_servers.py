"""The MCP reference servers from npm (``tests/mcp_tools/package.json``, installed by scripts/test):
``server-everything`` (it announces list_changed, reports progress and answers every content type)
and ``server-filesystem``. Skipped, with the reason, where node or the packages are missing."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from nodwyn.compose.setup import open_agent
from nodwyn.log import Store, data_root
from nodwyn.replay.exact import verify_all
from nodwyn.testing import ScriptedBackend, isolated_env
from nodwyn.values.canonical import canonical_bytes
from nodwyn.values.events import NOTE, TOOL_RESULT

from .helpers import call, config

BIN = Path(__file__).with_name("node_modules") / ".bin"
EVERYTHING, FILESYSTEM = BIN / "mcp-server-everything", BIN / "mcp-server-filesystem"

pytestmark = [
    pytest.mark.skipif(
        shutil.which("node") is None, reason="node is not installed (the servers are npm packages)"
    ),
    pytest.mark.skipif(
        not EVERYTHING.exists() or not FILESYSTEM.exists(),
        reason="the npm servers are not installed: run `npm ci --prefix tests/mcp_tools` (scripts/test does)",
    ),
]


def _entry(name: str, command: Path, *args: str, approve: str = '"auto"') -> str:
    quoted = ", ".join(f'"{a}"' for a in args)
    return f'[mcp.{name}]\ncommand = "{command}"\nargs = [{quoted}]\napprove = {approve}\n'


def test_server_everything_content_progress_and_list_changed_in_a_session(
    tmp_path: Path, workspace: Path
) -> None:
    steps = [
        call("mcp__everything__get-tiny-image"),
        call("mcp__everything__get-resource-links", count=2),
        call("mcp__everything__get-structured-content", location="Chicago"),
        call("mcp__everything__trigger-long-running-operation", duration=1, steps=3),
        call("mcp__everything__get-sum", a=2, b=40),
        {"text": "done"},
    ]
    notices: list[str] = []

    class Shown:
        def __getattr__(self, name: str) -> Any:  # the display protocol's methods, all quiet but notice
            return notices.append if name == "notice" else (lambda *a: None)

    with ScriptedBackend(steps) as model:
        config(tmp_path, model.url, _entry("everything", EVERYTHING, "stdio"))
        env = isolated_env(tmp_path)
        opened = open_agent(env=env, workspace=workspace, backend_for=lambda _: model, display=Shown())
        try:
            assert opened.agent.user_turn("try everything").text == "done"
            sid = opened.agent.session_id
            attachments = opened.agent.log.attachments
            with Store(data_root(env)).open(sid) as log:
                events = list(log.read())
            image, links, structured, slow, total = (e.data for e in events if e.kind == TOOL_RESULT)
            digest = image["text"].split("attachment sha256:")[1].split("]")[0]
            assert attachments.get(digest)[:4] == b"\x89PNG"
        finally:
            opened.close()
        tools = {canonical_bytes(r.body["tools"]) for r in model.wire}
        names = [t["function"]["name"] for t in model.wire[0].body["tools"]]
    assert len(tools) == 1  # the list_changed it sent did not move a byte
    assert "mcp__everything__echo" in names and names == sorted(names)
    assert "[resource Text Resource 2 demo://resource/dynamic/text/2 (text/plain)" in links["text"]
    assert '"temperature":36' in structured["text"] and not structured["error"]
    assert slow["text"].startswith("Long running operation completed")
    assert "42" in total["text"]
    assert [n for n in notices if "trigger-long-running-operation" in n] == [
        f"everything: trigger-long-running-operation {i}/3" for i in (1, 2, 3)
    ]
    assert "everything changed its tools; they take effect on the next resume" in [
        e.data["text"] for e in events if e.kind == NOTE
    ]
    with Store(data_root(env)).open(sid) as log:
        assert all(v.error is None for v in verify_all(log))


def test_server_filesystem_reads_in_the_workspace_and_its_write_asks(tmp_path: Path, workspace: Path) -> None:
    steps = [
        call("mcp__fs__read_text_file", path=str(workspace / "notes.txt")),
        call("mcp__fs__write_file", path=str(workspace / "new.txt"), content="x"),
        {"text": "read it"},
    ]
    with ScriptedBackend(steps) as model:
        config(tmp_path, model.url, _entry("fs", FILESYSTEM, str(workspace), approve='["read_text_file"]'))
        env = isolated_env(tmp_path)
        opened = open_agent(env=env, workspace=workspace, backend_for=lambda _: model)  # no one to ask
        try:
            assert opened.agent.user_turn("read notes").text == "read it"
            sid = opened.agent.session_id
        finally:
            opened.close()
    with Store(data_root(env)).open(sid) as log:
        read, write = (e.data for e in log.read() if e.kind == TOOL_RESULT)
    assert read["text"] == "hello\n" and not read["error"]
    assert write["error"] and write["text"].startswith("declined: mcp__fs__write_file was not approved")
    assert not (workspace / "new.txt").exists()
