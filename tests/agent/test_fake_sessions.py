"""Whole sessions against the fake providers (real HTTP servers on 127.0.0.1) with scripted replies:
every tool, a plan, a sub-agent, a compaction, folds, a model switch, an image and a resume.
Every request the log records replays to its digest."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nodwyn.agent import strategies
from nodwyn.compose.setup import open_agent
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.replay.exact import replay_request
from nodwyn.testing import isolated_env
from nodwyn.values.events import Event


def call(name: str, cid: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "id": cid, "arguments": arguments}


def write_config(path: Path, chat_url: str, anthropic_url: str) -> None:
    path.write_text(
        f"""# test config
[control]
model = "chat"

[window]
high_water = 20000
low_water = 1200

[models.chat]
api = "openai-chat"
model = "fake-model"
base_url = "{chat_url}"
context_size = 32000
takes_images = true

[models.claude]
api = "anthropic"
model = "fake-model"
base_url = "{anthropic_url}"
context_size = 32000
cache_control = "ephemeral"
"""
    )


def events(env: dict[str, str], session_id: str) -> list[Event]:
    with Store(Path(env["NODWYN_HOME"])).open(session_id) as log:
        return list(log.read(1))


def assert_every_request_replays(env: dict[str, str], session_id: str) -> int:
    with Store(Path(env["NODWYN_HOME"])).open(session_id) as log:
        reqs = [e for e in log.read(1) if e.kind == "llm.req"]
        for e in reqs:
            assert replay_request(log, e.seq).digest == e.data["digest"]
    return len(reqs)


@pytest.mark.needs("bwrap")
def test_a_session_with_every_tool_and_strategy(
    tmp_path: Path, workspace: Path, make_png: Callable[..., bytes]
) -> None:
    image = tmp_path / "shot.png"
    image.write_bytes(make_png())
    chat_script: list[dict[str, Any]] = [
        {
            "text": "Planning.",
            "calls": [call("plan-write", "c1", plan="1. look\n2. fix"), call("fs-list", "c2")],
        },
        {
            "calls": [
                call("fs-read", "c3", path="calc.py", lines="50-60"),
                call("fs-read", "c4", path="calc.py"),
            ]
        },
        {"calls": [call("fs-grep", "c5", pattern="def "), call("shell", "c6", command="echo $((1+1))")]},
        {
            "calls": [
                call("fs-edit", "c7", path="calc.py", old="a - b", new="a + b"),
                call("fs-write", "c8", path="notes.txt", content="fixed add\n"),
            ]
        },
        {"calls": [call("recall", "c9", seq=2), call("teleport", "c10", to="mars"), call("fs-read", "c11")]},
        {
            "calls": [
                call("sub-agent", "c12", task="Read calc.py and report what add does.", tools=["fs-read"])
            ]
        },
        {"calls": [call("fs-read", "s1", path="calc.py")]},  # the sub-agent
        {"text": "add returns a + b."},  # the sub-agent's answer
        {"text": "Fixed calc.py."},
        {"text": "A red picture."},
    ]
    claude_script = [
        {"text": "Summary: calc.py fixed."},
        {"text": "NOTE: calc.py add fixed; notes.txt written."},
        {"text": "Continuing: nothing left."},
        {"text": "1. check\n2. report"},  # the planner, after resume
        {"text": "All good."},
    ]
    with (
        FakeServer(api="openai-chat", script=chat_script) as chat,
        FakeServer(api="anthropic", script=claude_script) as claude,
    ):
        config = tmp_path / "config.toml"
        write_config(config, chat.url, claude.url)
        env = isolated_env(tmp_path)
        agent = open_agent(env=env, workspace=workspace, yes=True).agent
        sid = agent.session_id
        first = agent.user_turn("Fix calc.py.")
        assert first.text == "Fixed calc.py." and first.requests == 9
        assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
        assert (workspace / "notes.txt").read_text() == "fixed add\n"

        second = agent.user_turn("What is in the picture?", [image])
        assert second.text == "A red picture."
        strategies.switch_model(agent, "claude")
        assert agent.user_turn("Summarize.").text == "Summary: calc.py fixed."
        note = strategies.compact(agent)
        assert note.startswith("NOTE:")
        assert agent.run(agent.state.ctx).text == "Continuing: nothing left."
        agent.log.close()

        resumed = open_agent(env=env, workspace=workspace, resume=sid, yes=True).agent
        assert resumed.model.name == "claude" and resumed.state.ctx == agent.state.ctx
        assert resumed.user_turn("Check once more.", plan_first=True).text == "All good."
        resumed.log.close()

        chat_bodies = [r.body for r in chat.requests if r.path.endswith("/chat/completions")]
        claude_bodies = [r.body for r in claude.requests if r.path.endswith("/messages")]
        assert chat.remaining == [] and claude.remaining == []

    log = events(env, sid)
    kinds = [e.kind for e in log]
    results = {e.data["call_id"]: e.data for e in log if e.kind == "tool.result"}
    # every tool ran and answered; bad calls got one clear error each
    assert results["c1"]["text"] == "plan recorded"
    assert "calc.py" in results["c2"]["text"]
    assert results["c3"]["error"] and "calc.py has 2 lines" in results["c3"]["text"]
    assert results["c4"]["text"] == "def add(a, b):\n    return a - b\n"
    assert results["c4"]["range"] == {"start": 1, "end": 2, "total": 2}
    assert "calc.py:1: def add(a, b):" in results["c5"]["text"]
    assert results["c6"]["text"] == "2\n[exit 0]"
    assert results["c7"]["text"].startswith("edited calc.py")
    assert results["c9"]["text"] == "[seq 2]\nFix calc.py."
    assert results["c10"]["error"] and "unknown tool 'teleport'" in results["c10"]["text"]
    assert results["c11"]["error"] and "missing required argument 'path'" in results["c11"]["text"]
    assert results["c12"]["text"] == "add returns a + b." and not results["c12"]["error"]
    # the plan, the sub-agent's own context with only fs-read, the folds, the switch, the narrowing
    assert [e.data["text"] for e in log if e.kind == "gate.plan"] == [
        "1. look\n2. fix",
        "1. check\n2. report",
    ]
    sub_open = next(e for e in log if e.kind == "ctx.open" and e.data["kind"] == "sub")
    assert sub_open.data["offered_tools"] == ["fs-read"] and sub_open.data["parent_call"] == "c12"
    sub_req = next(e for e in log if e.kind == "llm.req" and e.ctx == sub_open.data["id"])
    assert sub_req.data.get("offered_tools") == ["fs-read"]
    assert [t["function"]["name"] for t in chat_bodies[6]["tools"]] == ["fs-read"]
    folds = {e.data["target"]: e.data["text"] for e in log if e.kind == "result.fold"}
    seq_of = {e.data["call_id"]: e.seq for e in log if e.kind == "tool.result"}
    assert seq_of["c3"] in folds and folds[seq_of["c3"]].startswith("[failed fs-read attempt folded")
    assert seq_of["c4"] in folds and folds[seq_of["c4"]].startswith("[stale read of calc.py folded")
    assert "model.switch" in kinds and "session.resume" in kinds
    narrow = next(e for e in log if e.kind == "ctx.open" and e.data["kind"] == "narrow")
    assert narrow.data["system"].startswith("# Handover note (from the conversation so far)\nNOTE: calc.py")
    note_req = [e for e in log if e.kind == "llm.req" and e.data.get("headroom")]
    assert len(note_req) == 1 and note_req[0].data.get("no_tools")
    # on the wire: the image went to the model that takes images, and was withheld from the other
    image_parts = [
        p for m in chat_bodies[9]["messages"] if isinstance(m["content"], list) for p in m["content"]
    ]
    assert any(p.get("type") == "image_url" for p in image_parts)
    withheld = [
        e.data.get("withheld_images") for e in log if e.kind == "llm.req" and e.data["model"] == "claude"
    ]
    assert withheld[0] and "model claude takes no images" in withheld[0][0]["reason"]
    claude_parts = [
        p for m in claude_bodies[0]["messages"] if isinstance(m["content"], list) for p in m["content"]
    ]
    assert not any(p.get("type") == "image" for p in claude_parts)
    assert any("was not sent: model claude takes no images" in p.get("text", "") for p in claude_parts)
    assert (
        claude_bodies[2]["system"][0]["text"].startswith("# Handover note")
        if isinstance(claude_bodies[2]["system"], list)
        else claude_bodies[2]["system"].startswith("# Handover note")
    )
    assert "tools" not in claude_bodies[3] or not claude_bodies[3]["tools"]  # the planner: no tools
    assert assert_every_request_replays(env, sid) == 15


def test_an_image_is_withheld_from_a_host_the_person_did_not_confirm(
    tmp_path: Path, workspace: Path, make_png: Callable[..., bytes]
) -> None:
    image = tmp_path / "shot.png"
    image.write_bytes(make_png(600, 400))
    with (
        FakeServer(api="openai-chat", script=[{"text": "a red box"}]) as first,
        FakeServer(api="openai-chat", script=[{"text": "no image here"}]) as second,
    ):
        config = tmp_path / "config.toml"
        other = second.url.replace("127.0.0.1", "localhost")
        config.write_text(
            f"""[control]
model = "a"
[models.a]
api = "openai-chat"
model = "fake-model"
base_url = "{first.url}"
context_size = 32000
takes_images = true
[models.b]
api = "openai-chat"
model = "fake-model"
base_url = "{other}"
context_size = 32000
takes_images = true
"""
        )
        env = {"NODWYN_HOME": str(tmp_path / "home"), "NODWYN_CONFIG": str(config), "HOME": str(tmp_path)}
        agent = open_agent(env=env, workspace=workspace).agent
        agent.user_turn("What is this?", [image])
        strategies.switch_model(agent, "b")
        agent.user_turn("And now?")
        sid = agent.session_id
        agent.log.close()
        sent = [
            p
            for m in second.requests[-1].body["messages"]
            if isinstance(m["content"], list)
            for p in m["content"]
        ]
    assert not any(p.get("type") == "image_url" for p in sent)
    log = events(env, sid)
    ref = next(e for e in log if e.kind == "user.msg" and e.data.get("images")).data["images"][0]
    assert (ref["width"], ref["height"], ref["media_type"], ref["host"]) == (
        600,
        400,
        "image/png",
        "127.0.0.1",
    )
    reqs = [e for e in log if e.kind == "llm.req"]
    assert "withheld_images" not in reqs[0].data or not reqs[0].data["withheld_images"]
    assert reqs[1].data["withheld_images"] == [
        {"digest": ref["digest"], "reason": "the image was confirmed for 127.0.0.1, not localhost"}
    ]
    assert assert_every_request_replays(env, sid) == 2
