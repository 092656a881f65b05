"""Sessions whose catalog holds an MCP server's tools (the calc server, written with the SDK), over
stdio and streamable HTTP, against a scripted model on a real fake provider: what went over the
wire, what the log holds, and that every request replays with the server gone. Stdio servers run
in the session's sandbox (bwrap) unless their entry says ``sandbox = "off"``."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from nodwyn.cli.stats import aggregate, describe
from nodwyn.log import Store, data_root
from nodwyn.replay.exact import verify_all
from nodwyn.testing import isolated_env
from nodwyn.values.canonical import canonical_bytes
from nodwyn.values.events import NOTE, SESSION_RESUME, SessionResume, decode

from .helpers import CALC, calc, call, session

needs_bwrap = pytest.mark.needs("bwrap")  # skipped naming what to install (tests/conftest.py)


def _replays(env: dict[str, str], sid: str) -> int:
    with Store(data_root(env)).open(sid) as log:
        verdicts = list(verify_all(log))
    assert all(v.error is None for v in verdicts), [v.error for v in verdicts]
    return len(verdicts)


@pytest.mark.needs("bwrap")
def test_mcp_tools_join_the_catalog_sorted_with_the_builtins_and_answer_calls(
    tmp_path: Path, workspace: Path
) -> None:
    steps = [call("mcp__calc__add", a=2, b=3), call("mcp__calc__point", x=1, y=2), {"text": "5"}]
    with session(tmp_path, workspace, steps, calc(approve="auto")) as run:
        with run.open() as opened:
            assert opened.agent.user_turn("add 2 and 3").text == "5"
        body = run.model.wire[0].body
    names = [t["function"]["name"] for t in body["tools"]]
    assert names == sorted(names)
    assert {"mcp__calc__add", "mcp__calc__echo", "fs-read", "shell"} <= set(names)
    add = next(t["function"] for t in body["tools"] if t["function"]["name"] == "mcp__calc__add")
    assert add["description"] == "Add two integers (version 1)."
    assert add["parameters"]["required"] == ["a", "b"]
    results = run.results()
    assert [r["text"] for r in results] == ["5", '{\n  "x": 1,\n  "y": 2,\n  "sum": 3\n}']
    assert not any(r["error"] for r in results)


@pytest.mark.needs("bwrap")
def test_list_changed_between_requests_changes_no_byte_of_the_tools_and_replays_without_the_server(
    tmp_path: Path, workspace: Path
) -> None:
    server = workspace / "calc_copy.py"  # in the workspace: the sandbox's /tmp is its own
    shutil.copy(CALC, server)
    steps = [
        call("mcp__calc__change"),
        call("mcp__calc__add", a=1, b=1),
        call("mcp__calc__change"),
        {"text": "two"},
        {"text": "still two"},
    ]
    entry = calc(approve="auto").replace(str(CALC), str(server))
    with session(tmp_path, workspace, steps, entry) as run:
        with run.open() as opened:
            assert opened.agent.user_turn("one plus one").text == "two"
            assert opened.agent.user_turn("again?").text == "still two"
        tools = [canonical_bytes(r.body["tools"]) for r in run.model.wire]
    assert len(tools) == 5 and len(set(tools)) == 1  # byte-identical in every request
    notes = [e.data["text"] for e in run.events() if e.kind == NOTE]
    said = "calc changed its tools; they take effect on the next resume"
    assert notes.count(said) == 2 and run.shown.notices.count(said) == 2
    server.unlink()  # the server is gone; replay needs none
    (tmp_path / "config.toml").unlink()
    assert _replays(run.env, run.sid) == 5


@pytest.mark.needs("bwrap")
def test_a_resume_lists_again_and_records_the_changed_catalog(tmp_path: Path, workspace: Path) -> None:
    with session(tmp_path, workspace, [{"text": "first"}, {"text": "second"}], calc()) as run:
        with run.open() as opened:
            opened.agent.user_turn("hi")
        run.configure(calc("calc", "--version", "2"))
        with run.open(resume=run.sid) as opened:
            opened.agent.user_turn("and now?")
        before, after = (r.body["tools"] for r in run.model.wire)
    desc = {t["function"]["name"]: t["function"]["description"] for t in after}
    assert desc["mcp__calc__add"] == "Add two integers (version 2)."
    assert canonical_bytes(before) != canonical_bytes(after)
    resumes = [decode(e) for e in run.events() if e.kind == SESSION_RESUME]
    assert len(resumes) == 1 and isinstance(resumes[0], SessionResume) and resumes[0].recipe is not None
    recorded = {t.name: t.description for t in resumes[0].recipe.tools}
    assert recorded["mcp__calc__add"] == "Add two integers (version 2)."
    resume_seq = next(e.seq for e in run.events() if e.kind == SESSION_RESUME)
    _, _, diagnoses = aggregate(data_root(run.env), run.sid, diagnose=True)  # what `nodwyn cache` reads
    assert [d.kind for d in diagnoses].count("moved") == 1  # one prefix move, at the resume
    moved = diagnoses[-1]
    assert moved.kind == "moved" and f"resume at seq {resume_seq}" in [str(c) for c in moved.causes]
    assert f"resume at seq {resume_seq}" in describe(moved)  # named by `nodwyn cache`


@pytest.mark.needs("bwrap")
def test_a_call_asks_as_a_write_does_and_the_prompt_names_the_server(tmp_path: Path, workspace: Path) -> None:
    asked: list[str] = []

    def ask(tool: str, what: str, where: str | None) -> bool:
        asked.append(f"{tool}: {what}" + ("" if where is None else f" ({where})"))
        return False

    steps = [call("mcp__calc__add", a=1, b=2), call("mcp__calc__echo", text="hi"), {"text": "done"}]
    with (
        session(tmp_path, workspace, steps, calc(approve=["echo"])) as run,
        run.open(ask=ask, always_ask=True) as opened,
    ):
        opened.agent.user_turn("add")
    assert asked == ['mcp__calc__add: call add on mcp server calc with {"a": 1, "b": 2}']
    add, echo = run.results()
    assert add["error"] and add["text"].startswith("declined: mcp__calc__add was not approved")
    assert 'approve = "auto"' in add["text"] and "[mcp.calc]" in add["text"]
    assert echo == {**echo, "text": "hi", "error": False}  # listed in approve: no question


@pytest.mark.needs("bwrap")
def test_arguments_are_checked_against_the_schema_before_the_server_sees_them(
    tmp_path: Path, workspace: Path
) -> None:
    with (
        session(
            tmp_path, workspace, [call("mcp__calc__add", a="one", b=2), {"text": "ok"}], calc(approve="auto")
        ) as run,
        run.open() as opened,
    ):
        opened.agent.user_turn("add")
    (result,) = run.results()
    assert result["error"] and "'a' must be an integer" in result["text"]


def _image_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        m
        for m in body["messages"]
        if m["role"] == "user"
        and any(p.get("type") == "image_url" for p in m["content"] if isinstance(m["content"], list))
    ]


@pytest.mark.needs("bwrap")
def test_an_image_result_goes_to_a_model_that_takes_images_as_an_image_part_and_replays(
    tmp_path: Path, workspace: Path
) -> None:
    steps = [call("mcp__calc__media"), call("mcp__calc__fail"), {"text": "a dot"}]
    with session(tmp_path, workspace, steps, calc(approve="auto"), model="takes_images = true") as run:
        with run.open() as opened:
            opened.agent.user_turn("show")
            store = opened.agent.log.attachments
            media, failed = run.results()
            digest = media["text"].split("attachment sha256:")[1].split("]")[0]
            assert store.get(digest)[:8] == b"\x89PNG\r\n\x1a\n"
        second, third = run.model.wire[1].body, run.model.wire[2].body
    assert media["text"].startswith("here\n[image image/png, ")
    assert "[resource notes file:///tmp/notes.txt (text/plain)]" in media["text"]
    (ref,) = media["images"]
    assert ref == {**ref, "digest": digest, "media_type": "image/png", "width": 1, "height": 1}
    assert ref["host"] == "127.0.0.1"  # confirmed for the model's host, as an --image is
    assert failed == {**failed, "error": True, "text": "Error executing tool fail"}  # the server's isError
    roles = [m["role"] for m in second["messages"]]
    assert roles[-2:] == ["tool", "user"]  # the result, then its image: results still follow their call
    (pics,) = _image_messages(second)
    assert pics["content"][0]["text"].startswith("[1 image returned by mcp__calc__media (call ")
    assert pics["content"][1]["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")
    assert len(_image_messages(third)) == 1  # the next request shows it again, byte for byte
    assert _replays(run.env, run.sid) == 3  # replay rebuilds the image part from the log's digest


@pytest.mark.needs("bwrap")
def test_an_image_result_to_a_model_that_takes_none_says_so_in_its_text(
    tmp_path: Path, workspace: Path
) -> None:
    steps = [call("mcp__calc__media"), {"text": "no eyes"}]
    with session(tmp_path, workspace, steps, calc(approve="auto")) as run:
        with run.open() as opened:
            opened.agent.user_turn("show")
        second = run.model.wire[1].body
    (media,) = run.results()
    assert media["text"].endswith("\n[1 image not sent: model m takes no images]")
    assert "images" not in media
    assert not _image_messages(second) and "takes no images" in second["messages"][-1]["content"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_streamable_http_server_with_a_credential_bound_to_its_origin(
    tmp_path: Path, workspace: Path
) -> None:
    port = _free_port()
    token = "tok-" + "q" * 24
    proc = subprocess.Popen(  # the server refuses a request without the credential's bearer header
        [sys.executable, str(CALC), "--http", str(port), "--token", token],
        stderr=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        entry = f'[mcp.web]\nurl = "{url}"\ncredential = "WEB_TOKEN"\napprove = "auto"\n'
        steps = [call("mcp__web__add", a=20, b=22), {"text": "42"}]
        env = lambda p: isolated_env(p, WEB_TOKEN=token)  # noqa: E731
        with session(tmp_path, workspace, steps, entry, env=env) as run, run.open() as opened:
            assert opened.agent.user_turn("add").text == "42"
        (result,) = run.results()
        assert result["text"] == "42" and not result["error"]
    finally:
        proc.terminate()
        proc.wait(10)


@needs_bwrap
def test_a_stdio_server_runs_in_the_sessions_sandbox_unless_its_entry_says_off(
    tmp_path: Path, workspace: Path
) -> None:
    outside = tmp_path / "outside.txt"
    (workspace / ".git").mkdir()
    steps = [
        call("mcp__box__write", path=str(workspace / "in.txt"), text="in"),
        call("mcp__box__write", path=str(workspace / ".git" / "x"), text="x"),
        call("mcp__box__write", path=str(outside), text="out"),
        call("mcp__free__write", path=str(tmp_path / "free.txt"), text="free"),
        {"text": "done"},
    ]
    servers = (calc("box", approve="auto"), calc("free", approve="auto", sandbox="off"))
    with session(tmp_path, workspace, steps, *servers) as run, run.open() as opened:
        hub = opened.servers.hub if opened.servers is not None else None
        assert hub is not None
        box, free = hub.connections["box"].pid, hub.connections["free"].pid
        assert box is not None and free is not None
        assert Path(f"/proc/{box}/cmdline").read_bytes().split(b"\0")[0].endswith(b"bwrap")
        assert Path(f"/proc/{free}/cmdline").read_bytes().split(b"\0")[0] == sys.executable.encode()
        opened.agent.user_turn("write")
    inside, git, _, unconfined = (r["text"] for r in run.results())
    assert inside == "wrote" and (workspace / "in.txt").read_text() == "in"
    assert git == "refused: Read-only file system" and not (workspace / ".git" / "x").exists()
    assert not outside.exists()  # outside the workspace the write went nowhere (the sandbox's own /tmp)
    assert (
        unconfined == "wrote" and (tmp_path / "free.txt").read_text() == "free"
    )  # sandbox = "off": as the person
