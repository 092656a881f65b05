"""A reply's reasoning_details through the agent loop against an OpenRouter-like fake:
details the log keeps as they came go back byte for byte on their own message; details
the log's redaction would change are left out before the reply is logged, with a note, and that
reply goes back with its thinking instead. The fake refuses signed details it did not give, so an
altered array sent back would fail the next request."""

from pathlib import Path
from typing import Any

import orjson

from nodwyn.compose.setup import open_agent
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.replay.exact import replay_request

# An OpenAI-key shape, which the log's redaction replaces wherever it meets one.
LEAKED = "sk-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7dEf0hIj3kLm6n"


def _run(tmp_path: Path, workspace: Path, entry: str, url: str, task: str) -> tuple[str, str]:
    """One turn of a session whose only model is ``entry`` at ``url``; the session id and the answer."""
    config = tmp_path / "config.toml"
    config.write_text(f'{entry}base_url = "{url}"\ncontext_size = 32000\n[control]\nmodel = "m"\n')
    env = {"NODWYN_HOME": str(tmp_path / "home"), "NODWYN_CONFIG": str(config), "HOME": str(tmp_path)}
    agent = open_agent(env=env, workspace=workspace).agent
    try:
        return agent.session_id, agent.user_turn(task).text
    finally:
        agent.log.close()


def test_details_redaction_would_change_are_left_out_and_the_reply_goes_back_with_its_thinking(
    tmp_path: Path, workspace: Path
) -> None:
    clean = [{"type": "reasoning.text", "text": "look at calc.py first", "signature": None}]
    leaky = [{"type": "reasoning.text", "text": f"the user's key is {LEAKED}", "signature": None}]
    script: list[dict[str, Any]] = [
        {
            "thinking": "look at calc.py first",
            "reasoning_details": clean,
            "calls": [{"name": "fs-list", "id": "c1", "arguments": {}}],
        },
        {
            "thinking": "read it now",
            "reasoning_details": leaky,
            "calls": [{"name": "fs-read", "id": "c2", "arguments": {"path": "calc.py"}}],
        },
        {"text": "add subtracts."},
    ]
    with FakeServer(api="openai-chat", family="openrouter", script=script) as fake:
        entry = '[models.m]\napi = "openai-chat"\nfamily = "openrouter"\nmodel = "meta/muse-spark-1.3"\n'
        sid, answer = _run(tmp_path, workspace, entry, fake.url, "What does add do?")
        assert answer == "add subtracts."
        bodies = [r.body for r in fake.requests if r.path.endswith("/chat/completions")]

    assert len(bodies) == 3
    assistants = [m for m in bodies[2]["messages"] if m["role"] == "assistant"]
    # the first reply's details, as the fake gave them (merged from the stream), on its own message
    assert "reasoning_details" in assistants[0] and "reasoning" not in assistants[0]
    assert assistants[0]["reasoning_details"][0]["text"] == "look at calc.py first"
    assert assistants[0]["reasoning_details"][0]["signature"]
    # the second reply's details were left out: it goes back with its thinking
    assert "reasoning_details" not in assistants[1]
    assert assistants[1]["reasoning"] == "read it now"
    assert LEAKED not in orjson.dumps(bodies).decode()

    with Store(tmp_path / "home").open(sid) as log:
        events = list(log.read(1))
        resps = [e.data["response"] for e in events if e.kind == "llm.resp"]
        assert [b["type"] for b in resps[0].get("blocks", [])] == ["reasoning_details"]
        assert resps[1].get("blocks", []) == []
        assert any("reasoning_details left out" in n and "openai-key" in n for n in resps[1]["notes"])
        # nothing was left for the log's redaction to change
        assert all(not e.data.get("_redaction", {}).get("replaced") for e in events if e.kind == "llm.resp")
        for e in events:
            if e.kind == "llm.req":
                assert replay_request(log, e.seq).digest == e.data["digest"]


def test_an_anthropic_thinking_block_redaction_would_change_is_left_out_too(
    tmp_path: Path, workspace: Path
) -> None:
    script: list[dict[str, Any]] = [
        {
            "blocks": [{"type": "thinking", "thinking": f"the key is {LEAKED}", "position": 0}],
            "calls": [{"name": "fs-list", "id": "c1", "arguments": {}}],
        },
        {"text": "done."},
    ]
    with FakeServer(api="anthropic", script=script) as fake:
        entry = '[models.m]\napi = "anthropic"\nmodel = "claude-test"\n'
        sid, answer = _run(tmp_path, workspace, entry, fake.url, "What is here?")
        assert answer == "done."
        bodies = [r.body for r in fake.requests if r.path.endswith("/messages")]

    assert len(bodies) == 2
    assistant = [m for m in bodies[1]["messages"] if m["role"] == "assistant"][0]
    assert [c["type"] for c in assistant["content"]] == ["tool_use"]
    assert LEAKED not in orjson.dumps(bodies).decode()
    with Store(tmp_path / "home").open(sid) as log:
        events = list(log.read(1))
        resps = [e.data["response"] for e in events if e.kind == "llm.resp"]
        assert resps[0].get("blocks", []) == []
        assert any("thinking left out" in n and "openai-key" in n for n in resps[0]["notes"])
        for e in events:
            if e.kind == "llm.req":
                assert replay_request(log, e.seq).digest == e.data["digest"]
