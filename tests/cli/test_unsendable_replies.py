"""No logged reply makes a conversation unsendable (issue 20, item 2; ADR 0310): an empty reply (no
text, calls or blocks) and a thinking-only reply whose blocks went stale after a summary, each
followed by more turns through ``nodwyn run``/``resume`` against every API's fake."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from nodwyn.fakes import FakeApi, FakeServer
from nodwyn.log import Store

from .test_run import nodwyn

ENTRY = {
    "anthropic": 'api = "anthropic"\ncache_control = "ephemeral"\n',
    "openai-chat": 'api = "openai-chat"\n',
    "responses": 'api = "responses"\nkeep_reasoning = true\n',
    "ollama": 'api = "ollama"\n',
}
PATHS = {
    "anthropic": "/messages",
    "openai-chat": "/chat/completions",
    "responses": "/responses",
    "ollama": "/chat",
}


def configure(env: dict[str, str], api: FakeApi, url: str) -> None:
    Path(env["NODWYN_CONFIG"]).write_text(
        f'[control]\nmodel = "m"\n\n[models.m]\n{ENTRY[api]}model = "fake-model"\n'
        f'base_url = "{url}"\ncontext_size = 32000\n'
    )


def _session(out: str) -> str:
    m = re.match(r"^session (\S+): ", out.splitlines()[-1])
    assert m, out[-600:]
    return m.group(1)


def _assistants(api: FakeApi, body: dict[str, Any]) -> list[Any]:
    """The assistant turns of a request body as sent."""
    if api == "responses":
        return [it for it in body["input"] if it.get("role") == "assistant" or it.get("type") != "message"]
    return [m for m in body["messages"] if m.get("role") == "assistant"]


@pytest.mark.parametrize("api", sorted(ENTRY))
def test_an_empty_reply_and_a_stale_thinking_only_reply_leave_the_session_sendable(
    env: dict[str, str], api: FakeApi, tmp_path: Path
) -> None:
    thought: dict[str, Any] = {"thinking": "Pondering the question at length."}
    if api in ("anthropic", "responses"):
        thought["blocks"] = [
            {"type": "thinking", "thinking": "Pondering the question at length.", "position": 0}
        ]
    script = [{"text": "One."}, thought, {}, {"text": "Four."}, {"text": "Five."}]
    with FakeServer(api=api, script=script) as fake:
        configure(env, api, fake.url)
        first = nodwyn(env, "run", "one")
        assert first.returncode == 0, first.stderr
        sid = _session(first.stderr)
        for text in ("two", "three"):  # a thinking-only reply, then an empty one: each ends its turn
            done = nodwyn(env, "resume", sid, text)
            assert "answered with no text and no tool calls" in done.stderr, done.stderr
        with Store(Path(env["NODWYN_HOME"])).open(sid) as log:
            events = list(log.read(1))
        first_user = next(e.seq for e in events if e.kind == "user.msg")
        first_reply = next(e.seq for e in events if e.kind == "llm.resp")
        note = tmp_path / "summary.md"
        note.write_text("The person said one; the model said One.\n")
        added = nodwyn(
            env, "summary", "add", sid, "--from", str(first_user), "--to", str(first_reply), str(note)
        )
        assert added.returncode == 0, added.stderr  # the thinking-only reply's blocks are now stale
        four = nodwyn(env, "resume", sid, "four")
        assert four.returncode == 0, four.stderr
        assert four.stdout == "Four.\n"
        five = nodwyn(env, "resume", sid, "five")  # and again, from the log, after the resume
        assert five.returncode == 0 and five.stdout == "Five.\n", five.stderr
        bodies = [r.body for r in fake.requests if r.path.endswith(PATHS[api])]
    assert len(bodies) == 5 and not fake.remaining
    sent = bodies[3]
    assert "The person said one" in str(sent)  # the summary is in place of the first turn
    assert "Pondering" not in str(sent) or api in ("openai-chat", "ollama")  # stale: no block goes back
    for turn in _assistants(api, sent):
        assert turn.get("content") != [], turn  # never an empty content list
        if api == "anthropic":
            assert turn["content"], turn
