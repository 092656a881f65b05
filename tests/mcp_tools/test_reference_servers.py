"""The MCP reference servers from npm (``tests/mcp_tools/package.json``, installed by scripts/test):
``server-everything`` (it announces list_changed, reports progress and answers every content type)
and ``server-filesystem``, each in the session's sandbox (bwrap) as a session runs them by default.
Skipped, with the reason, where node, the packages or bwrap are missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodwyn.log import Store, data_root
from nodwyn.replay.exact import verify_all
from nodwyn.values.canonical import canonical_bytes
from nodwyn.values.events import NOTE

from .helpers import call, session

BIN = Path(__file__).with_name("node_modules") / ".bin"
EVERYTHING, FILESYSTEM = BIN / "mcp-server-everything", BIN / "mcp-server-filesystem"

pytestmark = [
    pytest.mark.needs("node", "bwrap"),  # skipped naming what to install (tests/conftest.py)
    pytest.mark.skipif(
        not EVERYTHING.exists() or not FILESYSTEM.exists(),
        reason="the npm servers are not installed: run `npm ci --prefix tests/mcp_tools` (scripts/test does)",
    ),
]


def _entry(name: str, command: Path, *args: str, approve: str = '"auto"') -> str:
    quoted = ", ".join(f'"{a}"' for a in args)
    head = f'[mcp.{name}]\ncommand = "{command}"\nargs = [{quoted}]\n'
    return head + f"approve = {approve}\nstart_timeout = 120\n"


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
    with session(tmp_path, workspace, steps, _entry("everything", EVERYTHING, "stdio")) as run:
        with run.open() as opened:
            assert opened.agent.user_turn("try everything").text == "done"
            attachments = opened.agent.log.attachments
            events = run.events()
            image, links, structured, slow, total = run.results()
            digest = image["text"].split("attachment sha256:")[1].split("]")[0]
            assert attachments.get(digest)[:4] == b"\x89PNG"
        model = run.model
        notices, env, sid = run.shown.notices, run.env, run.sid
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
    entry = _entry("fs", FILESYSTEM, str(workspace), approve='["read_text_file"]')
    with session(tmp_path, workspace, steps, entry) as run, run.open() as opened:  # no one to ask
        hub = opened.servers.hub if opened.servers is not None else None
        pid = None if hub is None else hub.connections["fs"].pid
        assert pid is not None and Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"/usr/bin/bwrap")
        assert opened.agent.user_turn("read notes").text == "read it"
    read, write = run.results()
    assert read["text"] == "hello\n" and not read["error"]
    assert write["error"] and write["text"].startswith("declined: mcp__fs__write_file was not approved")
    assert not (workspace / "new.txt").exists()
