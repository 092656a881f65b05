"""nodwyn.testing as an extension author uses it: a session built on disk replays for real, one in
memory records the same requests, and the scripted backend fails on unexpected or unused steps."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodwyn.agent.loop import Agent
from nodwyn.compose.setup import open_agent
from nodwyn.log import Store
from nodwyn.replay.exact import replay_request
from nodwyn.testing import ScriptedBackend, ScriptMismatch, SessionBuilder, Step, recipe
from nodwyn.values.content import TextPart, UserMessage
from nodwyn.values.request import Request
from nodwyn.window import TurnOptions


def test_a_session_built_on_disk_replays_every_request(tmp_path: Path) -> None:
    store = Store(tmp_path / "data", fsync=False)
    s = SessionBuilder(recipe(), store=store)
    s.turn("read it", [[("fs-read", '{"path": "a.py"}', "print(1)")]], "it prints 1")
    s.resume(recipe(), model="other")
    s.turn("and now?", [], "still 1")
    reqs = [e for e in s.events if e.kind == "llm.req"]
    assert len(reqs) == 3 and [r.data["model"] for r in reqs] == ["test", "test", "other"]
    assert all("start" in r.data for r in reqs)
    with store.open(s.id) as log:
        for r in reqs:
            replayed = replay_request(log, r.seq)
            assert replayed.digest == r.data["digest"] and replayed.canonical == s.sent[r.seq]
    s.close()


def test_in_memory_and_on_disk_record_the_same_requests(tmp_path: Path) -> None:
    def build(s: SessionBuilder) -> list[bytes]:
        s.turn("hello", [[("shell", '{"cmd": "ls"}', "a.py")]], "one file", thinking="look")
        s.request(turn=TurnOptions(no_tools=True))
        return list(s.sent.values())

    memory = build(SessionBuilder(recipe()))
    disk = SessionBuilder(recipe(), store=Store(tmp_path, fsync=False))
    assert build(disk) == memory
    disk.close()


def _agent(tmp_path: Path, backend: ScriptedBackend) -> Agent:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    config = tmp_path / "config.toml"
    config.write_text(
        f'[control]\nmodel = "fake"\n\n[models.fake]\napi = "openai-chat"\nmodel = "fake-model"\n'
        f'base_url = "{backend.url}"\ncontext_size = 32000\n'
    )
    env = {"NODWYN_HOME": str(tmp_path / "home"), "NODWYN_CONFIG": str(config)}
    return open_agent(env=env, workspace=ws, backend_for=lambda _: backend).agent


def _asks(text: str) -> Step:
    def expect(request: Request) -> bool:
        last = request.messages[-1]
        return isinstance(last, UserMessage) and any(
            text in p.text for p in last.parts[:1] if isinstance(p, TextPart)
        )

    return Step(reply={"text": "done"}, expect=expect)


def test_the_scripted_backend_drives_the_agent_and_checks_each_step(tmp_path: Path) -> None:
    with ScriptedBackend(
        [_asks("first"), {"calls": [{"name": "fs-list", "arguments": {}}]}, {"text": "ok"}]
    ) as b:
        agent = _agent(tmp_path, b)
        assert agent.user_turn("first task").text == "done"
        assert agent.user_turn("second task").text == "ok"
        assert len(b.wire) == 3


def test_an_unexpected_request_fails(tmp_path: Path) -> None:
    with (
        pytest.raises(ScriptMismatch, match="request 2 was not scripted"),
        ScriptedBackend([{"calls": [{"name": "fs-list", "arguments": {}}]}]) as b,
    ):
        _agent(tmp_path, b).user_turn("list it")


def test_a_failed_expectation_fails_before_anything_is_sent(tmp_path: Path) -> None:
    with (
        pytest.raises(ScriptMismatch, match="step 1: the request is not what the script expects"),
        ScriptedBackend([_asks("something else")]) as b,
    ):
        try:
            _agent(tmp_path, b).user_turn("list it")
        finally:
            assert b.wire == []


def test_unused_steps_fail(tmp_path: Path) -> None:
    with (
        pytest.raises(ScriptMismatch, match="1 of 2 scripted steps were never requested"),
        ScriptedBackend([{"text": "one"}, {"text": "two"}]) as b,
    ):
        _agent(tmp_path, b).user_turn("hello")
