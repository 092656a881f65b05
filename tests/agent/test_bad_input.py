"""Bad input in a session: each gives one clear message to the model or the person, and the session
goes on, or stops cleanly with everything in the log (and resumes from it)."""

from pathlib import Path
from typing import Any

import pytest

from nodwyn.compose.setup import open_agent
from nodwyn.errors import ConfigError, ProviderError
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.replay.exact import replay_request
from nodwyn.testing import isolated_env
from nodwyn.values.events import Event


def call(name: str, cid: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "id": cid, "arguments": arguments}


def env_for(tmp_path: Path, url: str, extra: str = "") -> dict[str, str]:
    config = tmp_path / "config.toml"
    config.write_text(
        f"""[control]
model = "chat"
[tools]
shell_timeout = 1
{extra}
[models.chat]
api = "openai-chat"
model = "fake-model"
base_url = "{url}"
context_size = 32000
"""
    )
    return isolated_env(tmp_path)


class Notes:
    def __init__(self) -> None:
        self.notices: list[str] = []

    def delta(self, kind: str, fragment: str) -> None: ...
    def request(self, event: Event) -> None: ...
    def response(self, event: Event, response: Any) -> None: ...
    def tool_call(self, ctx: str, call: Any) -> None: ...
    def tool_result(self, ctx: str, call: Any, outcome: Any) -> None: ...

    def notice(self, text: str) -> None:
        self.notices.append(text)


def log_of(env: dict[str, str], sid: str) -> list[Event]:
    with Store(Path(env["NODWYN_HOME"])).open(sid) as log:
        return list(log.read(1))


@pytest.mark.needs("bwrap")
def test_bad_tool_calls_each_get_one_clear_result_and_the_session_goes_on(
    tmp_path: Path, workspace: Path
) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("top secret")
    (workspace / "blob.bin").write_bytes(bytes(range(256)) * 10)
    with (workspace / "huge.log").open("w") as f:
        f.write(("y" * 99 + "\n") * (50 * 1024 * 1024 // 100))
    script: list[dict[str, Any]] = [
        {
            "calls": [
                call("fs-read", "b1", path=str(outside)),
                call("fs-read", "b2", path="../secret.txt"),
                call("fs-read", "b3", path="nope.py"),
                call("fs-read", "b4", path="blob.bin"),
                call("fs-read", "b5", path="huge.log"),
                call("fs-read", "b6", path=3),
                call("fs-teleport", "b7", path="x"),
                call("shell", "b8", command="sleep 30"),
            ]
        },
        {"text": "Understood."},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        env = env_for(tmp_path, fake.url)
        agent = open_agent(env=env, workspace=workspace, yes=True).agent
        result = agent.user_turn("Poke around.")
        agent.log.close()
        wire = fake.requests[-1].body
    assert result.text == "Understood."
    results = {e.data["call_id"]: e.data for e in log_of(env, agent.session_id) if e.kind == "tool.result"}
    expected = {
        "b1": "outside the workspace",
        "b2": "uses '..'",
        "b3": "no such file",
        "b4": "binary file",
        "b5": "too large to read whole; read a range",
        "b6": "'path' must be a string",
        "b7": "unknown tool 'fs-teleport'",
        "b8": "timed out after 1 s",
    }
    for cid, words in expected.items():
        assert results[cid]["error"] and words in results[cid]["text"], (cid, results[cid]["text"])
        assert "\n" not in results[cid]["text"].strip() or cid == "b8"
        assert "top secret" not in results[cid]["text"]
    sent = [m for m in wire["messages"] if m["role"] == "tool"]
    assert len(sent) == 8 and all(m["content"] for m in sent)


@pytest.mark.needs("bwrap")
def test_an_empty_reply_ends_the_turn_with_a_message(tmp_path: Path, workspace: Path) -> None:
    with FakeServer(api="openai-chat", script=[{"text": ""}, {"text": "Back."}]) as fake:
        env = env_for(tmp_path, fake.url)
        notes = Notes()
        agent = open_agent(env=env, workspace=workspace, display=notes).agent
        result = agent.user_turn("Hello?")
        assert result.stopped == "empty reply" and result.text == ""
        assert notes.notices == [
            "the model (chat) answered with no text and no tool calls; "
            "the turn ends here (its reply is in the log)"
        ]
        assert agent.user_turn("Still there?").text == "Back."
        agent.log.close()
    kinds = [e.kind for e in log_of(env, agent.session_id)]
    assert kinds.count("llm.resp") == 2 and "note" in kinds


def test_a_provider_failure_stops_cleanly_and_the_session_resumes(tmp_path: Path, workspace: Path) -> None:
    script: list[dict[str, Any]] = [
        {"calls": [call("fs-list", "a1")]},
        {"error": {"status": 400, "message": "bad things", "param": "messages"}},
        {"text": "Resumed fine."},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        env = env_for(tmp_path, fake.url)
        agent = open_agent(env=env, workspace=workspace).agent
        with pytest.raises(ProviderError, match="bad things"):
            agent.user_turn("List things.")
        agent.log.close()
        before = log_of(env, agent.session_id)
        assert [e.kind for e in before][-2:] == ["llm.req", "note"]
        assert "failed" in before[-1].data["text"] and "bad things" in before[-1].data["text"]
        again = open_agent(env=env, workspace=workspace, resume=agent.session_id).agent
        assert again.user_turn("Try again.").text == "Resumed fine."
        again.log.close()
    after = log_of(env, agent.session_id)
    assert after[: len(before)] == before  # nothing lost, nothing rewritten
    with Store(Path(env["NODWYN_HOME"])).open(agent.session_id) as log:
        for e in after:
            if e.kind == "llm.req":
                assert replay_request(log, e.seq).digest == e.data["digest"]


def test_writes_are_declined_without_a_person_or_approval(tmp_path: Path, workspace: Path) -> None:
    script: list[dict[str, Any]] = [
        {"calls": [call("fs-write", "w1", path="x.txt", content="x")]},
        {"text": "ok"},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        env = env_for(tmp_path, fake.url)
        agent = open_agent(env=env, workspace=workspace).agent  # no --yes, no terminal
        agent.user_turn("Write x.")
        agent.log.close()
    result = next(e.data for e in log_of(env, agent.session_id) if e.kind == "tool.result")
    assert (
        result["error"]
        and "declined" in result["text"]
        and "--yes" in result["text"]
        and not (workspace / "x.txt").exists()
    )


def test_malformed_config_stops_before_anything_is_written(tmp_path: Path, workspace: Path) -> None:
    # a high_water above the model's ceiling shrinks to fit; marks that contradict
    # each other whatever the model are refused
    env = env_for(tmp_path, "http://127.0.0.1:9/v1", extra="[window]\nhigh_water = 3000\nlow_water = 5000\n")
    with pytest.raises(ConfigError, match=r"low_water = 5000 must be below high_water \(3000\)"):
        open_agent(env=env, workspace=workspace)
    assert not (tmp_path / "home").exists() or Store(tmp_path / "home").ids() == []


def test_a_failure_inside_a_sub_agent_is_settled_on_resume(tmp_path: Path, workspace: Path) -> None:
    script: list[dict[str, Any]] = [
        {"calls": [call("sub-agent", "p1", task="Read calc.py.", tools=["fs-read"])]},
        {"error": {"status": 400, "message": "sub request refused"}},
        {"text": "Carrying on."},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        env = env_for(tmp_path, fake.url)
        agent = open_agent(env=env, workspace=workspace).agent
        with pytest.raises(ProviderError, match="sub request refused"):
            agent.user_turn("Delegate it.")
        agent.log.close()
        again = open_agent(env=env, workspace=workspace, resume=agent.session_id).agent
        assert again.user_turn("Go on.").text == "Carrying on."
        again.log.close()
        wire = fake.requests[-1].body["messages"]
    log = log_of(env, agent.session_id)
    closes = [e for e in log if e.kind == "ctx.close"]
    assert len(closes) == 1 and closes[0].data["result"] == "(interrupted before it answered)"
    answer = next(e.data for e in log if e.kind == "tool.result")
    assert answer["call_id"] == "p1" and answer["error"] and answer["text"].startswith("interrupted")
    assert [m.get("tool_call_id") for m in wire if m["role"] == "tool"] == ["p1"]
    with Store(Path(env["NODWYN_HOME"])).open(agent.session_id) as reader:
        for e in log:
            if e.kind == "llm.req":
                assert replay_request(reader, e.seq).digest == e.data["digest"]


def test_a_window_that_trimming_cannot_shrink_is_compacted_at_the_next_turn(
    tmp_path: Path, workspace: Path
) -> None:
    script = [{"text": "Read it."}, {"text": "NOTE: a long paste was discussed."}, {"text": "Fine."}]
    with FakeServer(api="openai-chat", script=script) as fake:
        env = env_for(
            tmp_path, fake.url, extra="[window]\nhigh_water = 2000\nlow_water = 1500\noutput_reserve = 200"
        )
        config = Path(env["NODWYN_CONFIG"])
        # a context the paste fits (ADR 0300: one that did not would be refused), whose high water it passes
        config.write_text(config.read_text().replace("context_size = 32000", "context_size = 3800"))
        notes = Notes()
        agent = open_agent(env=env, workspace=workspace, display=notes).agent
        agent.user_turn("Here is a paste: " + "lorem ipsum dolor sit amet " * 250)
        assert agent.user_turn("Thoughts?").text == "Fine."
        agent.log.close()
        last = fake.requests[-1].body["messages"]
    assert any("compacting first" in n for n in notes.notices)
    log = log_of(env, agent.session_id)
    narrow = next(e for e in log if e.kind == "ctx.open" and e.data["kind"] == "narrow")
    assert narrow.data["system"].split("\n")[1] == "NOTE: a long paste was discussed."
    assert last[0]["role"] == "system" and "NOTE: a long paste" in last[0]["content"]
    assert "lorem ipsum" not in str(last)


def test_bad_sub_agent_calls_answer_the_model_and_open_no_context(tmp_path: Path, workspace: Path) -> None:
    script: list[dict[str, Any]] = [
        {
            "calls": [
                call("sub-agent", "s1", tools=["fs-read"]),
                call("sub-agent", "s2", task="   "),
                call("sub-agent", "s3", task="Look.", tools=["fs-read", "teleport", "sub-agent"]),
                call("sub-agent", "s4", task="Look.", tools="fs-read"),
            ]
        },
        {"text": "Understood."},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        env = env_for(tmp_path, fake.url)
        agent = open_agent(env=env, workspace=workspace).agent
        assert agent.user_turn("Delegate.").text == "Understood."
        agent.log.close()
        wire = {
            m["tool_call_id"]: m["content"] for m in fake.requests[-1].body["messages"] if m["role"] == "tool"
        }
    assert "sub-agent: missing required argument 'task'" in wire["s1"]
    assert 'sub-agent: "task" is empty' in wire["s2"]
    assert wire["s3"] == "sub-agent: cannot offer sub-agent, teleport; pick from the catalog"
    assert "sub-agent: argument 'tools' must be an array" in wire["s4"]
    log = log_of(env, agent.session_id)
    assert not [e for e in log if e.kind == "ctx.open"]
    assert all(e.data["error"] for e in log if e.kind == "tool.result")


def test_resuming_a_session_whose_workspace_is_gone_says_so(tmp_path: Path) -> None:
    ws = tmp_path / "gone"
    ws.mkdir()
    with FakeServer(api="openai-chat", script=[{"text": "Hello."}]) as fake:
        env = env_for(tmp_path, fake.url)
        agent = open_agent(env=env, workspace=ws).agent
        agent.user_turn("Hi.")
        agent.log.close()
    ws.rmdir()
    before = log_of(env, agent.session_id)
    with pytest.raises(ConfigError, match=rf"works in {ws}, which is no longer a directory; restore it"):
        open_agent(env=env, workspace=tmp_path, resume=agent.session_id)
    assert log_of(env, agent.session_id) == before
