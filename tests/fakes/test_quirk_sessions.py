"""Whole sessions against fakes sending the quirks real servers sent:
what goes back over the wire, what the log keeps, and that every request replays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from nodwyn.compose.setup import open_agent
from nodwyn.fakes import FakeApi, FakeServer
from nodwyn.log import Store
from nodwyn.replay.exact import replay_request
from nodwyn.testing import isolated_env
from nodwyn.values.events import Event


def _env(tmp_path: Path, entry: str) -> dict[str, str]:
    config = tmp_path / "config.toml"
    config.write_text(f'[control]\nmodel = "m"\n\n[models.m]\n{entry}context_size = 32000\n')
    return isolated_env(tmp_path)


def _run(env: dict[str, str], workspace: Path, asks: list[str]) -> tuple[str, list[Event]]:
    agent = open_agent(env=env, workspace=workspace, yes=True).agent
    sid = agent.session_id
    for ask in asks:
        agent.user_turn(ask)
    agent.log.close()
    with Store(Path(env["NODWYN_HOME"])).open(sid) as log:
        evs = list(log.read(1))
        for e in evs:
            if e.kind == "llm.req":
                assert replay_request(log, e.seq).digest == e.data["digest"]
    return sid, evs


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")
    return ws


READ = {"name": "fs-read", "arguments": {"path": "a.txt"}}


@pytest.mark.parametrize("api", ["openai-chat", "ollama"])
def test_calls_without_ids_get_ids_unique_in_the_session(
    tmp_path: Path, workspace: Path, api: FakeApi
) -> None:
    script: list[dict[str, Any]] = [
        {"calls": [READ, READ], "quirks": ["no_call_ids"]},
        {"text": "Read twice."},
        {"calls": [READ], "quirks": ["no_call_ids"]},
        {"text": "Read again."},
    ]
    with FakeServer(api=api, script=script) as fake:
        entry = f'api = "{api}"\nmodel = "fake-model"\nbase_url = "{fake.url}"\n'
        sid, evs = _run(_env(tmp_path, entry), workspace, ["Read a.txt twice.", "Once more."])
        bodies = [r.body for r in fake.requests if r.method == "POST"]
    reqs = [e.seq for e in evs if e.kind == "llm.req"]
    resps = [e for e in evs if e.kind == "llm.resp"]
    ids = [c["id"] for r in resps for c in r.data["response"]["calls"]]
    # each id follows from the log: the llm.req the reply answers, and the call's index
    assert ids == [f"call_{reqs[0]}_0", f"call_{reqs[0]}_1", f"call_{reqs[2]}_0"]
    assert len(set(ids)) == 3
    assert [e.data["call_id"] for e in evs if e.kind == "tool.result"] == ids
    # the last request carries every minted id back, each with its result
    sent = orjson.dumps(bodies[-1]).decode()
    assert all(sent.count(i) >= 2 for i in ids)


def test_phase_goes_back_and_a_done_marker_ends_the_stream(tmp_path: Path, workspace: Path) -> None:
    script: list[dict[str, Any]] = [
        {
            "text": "Reading the file first.",
            "phase": "commentary",
            "calls": [READ],
            "quirks": ["done_marker"],
        },
        {"text": "It says alpha.", "phase": "final_answer", "quirks": ["done_marker"]},
        {"text": "Yes.", "phase": "final_answer", "quirks": ["done_marker"]},
    ]
    with FakeServer(api="responses", script=script) as fake:
        entry = f'api = "responses"\nmodel = "fake-model"\nbase_url = "{fake.url}"\n'
        _, evs = _run(_env(tmp_path, entry), workspace, ["What does a.txt say?", "Sure?"])
        bodies = [r.body for r in fake.requests if r.method == "POST"]
    phases = [e.data["response"].get("phase") for e in evs if e.kind == "llm.resp"]
    assert phases == ["commentary", "final_answer", "final_answer"]
    said = [it for it in bodies[-1]["input"] if it.get("role") == "assistant"]
    assert [(m["content"], m["phase"]) for m in said] == [
        ("Reading the file first.", "commentary"),
        ("It says alpha.", "final_answer"),
    ]


def test_a_late_signature_goes_back_to_a_claude_route(tmp_path: Path, workspace: Path) -> None:
    details = [
        {
            "type": "reasoning.text",
            "text": "Read it first.",
            "signature": None,
            "format": "anthropic-claude-v1",
        }
    ]
    script: list[dict[str, Any]] = [
        {"calls": [READ], "reasoning_details": details, "quirks": ["empty_signature"]},
        {"text": "alpha", "reasoning_details": details, "quirks": ["empty_signature"]},
    ]
    with FakeServer(api="openai-chat", family="openrouter", script=script) as fake:
        entry = (
            f'api = "openai-chat"\nfamily = "openrouter"\nmodel = "fake-model"\nbase_url = "{fake.url}"\n'
            "reasoning_details_only = true\n"
        )
        _, evs = _run(_env(tmp_path, entry), workspace, ["What does a.txt say?"])
        bodies = [r.body for r in fake.requests if r.method == "POST"]
    assert len(bodies) == 2  # the fake refuses a signature it did not give: the second was accepted
    back = bodies[1]["messages"][2]["reasoning_details"]
    assert back[0]["signature"] and back[0]["text"] == "Read it first."
    first = next(e for e in evs if e.kind == "llm.resp")
    assert orjson.loads(first.data["response"]["blocks"][0]["data"]) == back


def test_list_valued_content_reads_as_text_and_thinking(tmp_path: Path, workspace: Path) -> None:
    script: list[dict[str, Any]] = [
        {"thinking": "Read it.", "calls": [READ], "quirks": ["list_content"]},
        {"thinking": "It says alpha.", "text": "alpha", "quirks": ["list_content"]},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        entry = f'api = "openai-chat"\nmodel = "fake-model"\nbase_url = "{fake.url}"\n'
        _, evs = _run(_env(tmp_path, entry), workspace, ["What does a.txt say?"])
    replies = [e.data["response"] for e in evs if e.kind == "llm.resp"]
    assert [(r["thinking"], r["text"]) for r in replies] == [("Read it.", ""), ("It says alpha.", "alpha")]
