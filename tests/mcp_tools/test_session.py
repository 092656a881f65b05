"""Sessions whose catalog holds an MCP server's tools (the calc server, written with the SDK), over
stdio and streamable HTTP, against a scripted model on a real fake provider: what went over the
wire, what the log holds, and that every request replays with the server gone."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from nodwyn.agent.tools import Outcome
from nodwyn.compose.setup import open_agent
from nodwyn.log import Store, data_root
from nodwyn.replay.exact import verify_all
from nodwyn.testing import ScriptedBackend, isolated_env
from nodwyn.values.canonical import canonical_bytes
from nodwyn.values.content import ToolCall
from nodwyn.values.events import NOTE, SESSION_RESUME, TOOL_RESULT, Event, SessionResume, decode
from nodwyn.values.request import Response

from .helpers import CALC, calc, call, config


class Shown:
    """A Display that keeps what the person would see."""

    def __init__(self) -> None:
        self.notices: list[str] = []

    def delta(self, kind: str, fragment: str) -> None:
        pass

    def request(self, event: Event) -> None:
        pass

    def response(self, event: Event, response: Response) -> None:
        pass

    def tool_call(self, ctx: str, call: ToolCall) -> None:
        pass

    def tool_result(self, ctx: str, call: ToolCall, outcome: Outcome) -> None:
        pass

    def notice(self, text: str) -> None:
        self.notices.append(text)


def _events(env: dict[str, str], sid: str) -> list[Event]:
    with Store(data_root(env)).open(sid) as log:
        return list(log.read())


def _results(events: list[Event]) -> list[dict[str, Any]]:
    return [e.data for e in events if e.kind == TOOL_RESULT]


def test_mcp_tools_join_the_catalog_sorted_with_the_builtins_and_answer_calls(
    tmp_path: Path, workspace: Path
) -> None:
    steps = [call("mcp__calc__add", a=2, b=3), call("mcp__calc__point", x=1, y=2), {"text": "5"}]
    with ScriptedBackend(steps) as model:
        config(tmp_path, model.url, calc(approve="auto"))
        env = isolated_env(tmp_path)
        opened = open_agent(env=env, workspace=workspace, backend_for=lambda _: model)
        try:
            assert opened.agent.user_turn("add 2 and 3").text == "5"
            sid = opened.agent.session_id
        finally:
            opened.close()
        names = [t["function"]["name"] for t in model.wire[0].body["tools"]]
    assert names == sorted(names)
    assert {"mcp__calc__add", "mcp__calc__echo", "fs-read", "shell"} <= set(names)
    add = next(
        t["function"] for t in model.wire[0].body["tools"] if t["function"]["name"] == "mcp__calc__add"
    )
    assert add["description"] == "Add two integers (version 1)."
    assert add["parameters"]["required"] == ["a", "b"]
    results = _results(_events(env, sid))
    assert [r["text"] for r in results] == ["5", '{\n  "x": 1,\n  "y": 2,\n  "sum": 3\n}']
    assert not any(r["error"] for r in results)
    assert '"content":"5"' in model.wire[1].raw.decode() or "5" in str(model.wire[1].body["messages"][-1])


def test_list_changed_between_requests_changes_no_byte_of_the_tools_and_replays_without_the_server(
    tmp_path: Path, workspace: Path
) -> None:
    server = tmp_path / "calc_copy.py"
    shutil.copy(CALC, server)
    steps = [
        call("mcp__calc__change"),
        call("mcp__calc__add", a=1, b=1),
        call("mcp__calc__change"),
        {"text": "two"},
        {"text": "still two"},
    ]
    shown = Shown()
    with ScriptedBackend(steps) as model:
        entry = calc(approve="auto").replace(str(CALC), str(server))
        config(tmp_path, model.url, entry)
        env = isolated_env(tmp_path)
        opened = open_agent(env=env, workspace=workspace, backend_for=lambda _: model, display=shown)
        try:
            assert opened.agent.user_turn("one plus one").text == "two"
            assert opened.agent.user_turn("again?").text == "still two"
            sid = opened.agent.session_id
        finally:
            opened.close()
        tools = [canonical_bytes(r.body["tools"]) for r in model.wire]
    assert len(tools) == 5 and len(set(tools)) == 1  # byte-identical in every request
    events = _events(env, sid)
    notes = [e.data["text"] for e in events if e.kind == NOTE]
    said = "calc changed its tools; they take effect on the next resume"
    assert notes.count(said) == 2 and shown.notices.count(said) == 2
    server.unlink()  # the server is gone; replay needs none
    (tmp_path / "config.toml").unlink()
    with Store(data_root(env)).open(sid) as log:
        verdicts = list(verify_all(log))
    assert len(verdicts) == 5 and all(v.error is None for v in verdicts)


def test_a_resume_lists_again_and_records_the_changed_catalog(tmp_path: Path, workspace: Path) -> None:
    steps = [{"text": "first"}, {"text": "second"}]
    with ScriptedBackend(steps) as model:
        config(tmp_path, model.url, calc())
        env = isolated_env(tmp_path)
        opened = open_agent(env=env, workspace=workspace, backend_for=lambda _: model)
        try:
            opened.agent.user_turn("hi")
            sid = opened.agent.session_id
        finally:
            opened.close()
        config(tmp_path, model.url, calc("calc", "--version", "2"))
        opened = open_agent(env=env, workspace=workspace, backend_for=lambda _: model, resume=sid)
        try:
            opened.agent.user_turn("and now?")
        finally:
            opened.close()
        before, after = (r.body["tools"] for r in model.wire)
    desc = {t["function"]["name"]: t["function"]["description"] for t in after}
    assert desc["mcp__calc__add"] == "Add two integers (version 2)."
    assert canonical_bytes(before) != canonical_bytes(after)
    resumes = [decode(e) for e in _events(env, sid) if e.kind == SESSION_RESUME]
    assert len(resumes) == 1 and isinstance(resumes[0], SessionResume) and resumes[0].recipe is not None
    recorded = {t.name: t.description for t in resumes[0].recipe.tools}
    assert recorded["mcp__calc__add"] == "Add two integers (version 2)."


def test_a_call_asks_as_a_write_does_and_the_prompt_names_the_server(tmp_path: Path, workspace: Path) -> None:
    asked: list[str] = []
    steps = [call("mcp__calc__add", a=1, b=2), call("mcp__calc__echo", text="hi"), {"text": "done"}]
    with ScriptedBackend(steps) as model:
        config(tmp_path, model.url, calc(approve=["echo"]))
        env = isolated_env(tmp_path)

        def ask(tool: str, what: str, where: str | None) -> bool:
            asked.append(f"{tool}: {what}" + ("" if where is None else f" ({where})"))
            return False

        opened = open_agent(
            env=env, workspace=workspace, backend_for=lambda _: model, ask=ask, always_ask=True
        )
        try:
            opened.agent.user_turn("add")
            sid = opened.agent.session_id
        finally:
            opened.close()
    assert asked == ['mcp__calc__add: call add on mcp server calc with {"a": 1, "b": 2}']
    add, echo = _results(_events(env, sid))
    assert add["error"] and add["text"].startswith("declined: mcp__calc__add was not approved")
    assert 'approve = "auto"' in add["text"] and "[mcp.calc]" in add["text"]
    assert echo == {**echo, "text": "hi", "error": False}  # listed in approve: no question


def test_arguments_are_checked_against_the_schema_before_the_server_sees_them(
    tmp_path: Path, workspace: Path
) -> None:
    steps = [call("mcp__calc__add", a="one", b=2), {"text": "ok"}]
    with ScriptedBackend(steps) as model:
        config(tmp_path, model.url, calc(approve="auto"))
        env = isolated_env(tmp_path)
        opened = open_agent(env=env, workspace=workspace, backend_for=lambda _: model)
        try:
            opened.agent.user_turn("add")
            sid = opened.agent.session_id
        finally:
            opened.close()
    (result,) = _results(_events(env, sid))
    assert result["error"] and "'a' must be an integer" in result["text"]


def test_results_map_images_links_structured_content_and_errors(tmp_path: Path, workspace: Path) -> None:
    steps = [call("mcp__calc__media"), call("mcp__calc__fail"), {"text": "ok"}]
    with ScriptedBackend(steps) as model:
        config(tmp_path, model.url, calc(approve="auto"))
        env = isolated_env(tmp_path)
        opened = open_agent(env=env, workspace=workspace, backend_for=lambda _: model)
        try:
            opened.agent.user_turn("show")
            sid = opened.agent.session_id
            store = opened.agent.log.attachments
            media, failed = _results(_events(env, sid))
            digest = media["text"].split("attachment sha256:")[1].split("]")[0]
            assert store.get(digest)[:8] == b"\x89PNG\r\n\x1a\n"
        finally:
            opened.close()
    assert media["text"].startswith("here\n[image image/png, ")
    assert "[resource notes file:///tmp/notes.txt (text/plain)]" in media["text"]
    assert failed == {**failed, "error": True, "text": "Error executing tool fail"}  # the server's isError


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_streamable_http_server_with_a_credential_bound_to_its_origin(
    tmp_path: Path, workspace: Path
) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(CALC), "--http", str(port)], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL
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
        steps = [call("mcp__web__add", a=20, b=22), {"text": "42"}]
        with ScriptedBackend(steps) as model:
            entry = f'[mcp.web]\nurl = "{url}"\ncredential = "WEB_TOKEN"\napprove = "auto"\n'
            config(tmp_path, model.url, entry)
            env = isolated_env(tmp_path, WEB_TOKEN="tok-" + "q" * 24)
            opened = open_agent(env=env, workspace=workspace, backend_for=lambda _: model)
            try:
                assert opened.agent.user_turn("add").text == "42"
                sid = opened.agent.session_id
            finally:
                opened.close()
        (result,) = _results(_events(env, sid))
        assert result["text"] == "42" and not result["error"]
    finally:
        proc.terminate()
        proc.wait(10)
