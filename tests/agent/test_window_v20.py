"""window-v20 in a real session (ADR 0150): asked for with ``recipe_version``, it trims whole
units behind one marker per run, which goes over the wire as ``[elided seq=A..B]``; ``recall`` of
a seq inside the run brings its unit back; a resume keeps the session's recipe unless asked, and
a new session starts on the default. Fakes are real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from nodwyn.compose.setup import open_agent
from nodwyn.errors import ConfigError
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.replay.exact import replay_request
from nodwyn.testing import isolated_env
from nodwyn.values.events import Event
from nodwyn.values.recipe import DEFAULT_VERSION

RUN = re.compile(r"\[elided seq=(\d+)\.\.(\d+)\]")


def config(path: Path, url: str) -> None:
    path.write_text(
        f"""[control]
model = "chat"

[window]
high_water = 6000
low_water = 3000

[models.chat]
api = "openai-chat"
model = "fake-model"
base_url = "{url}"
context_size = 32000
"""
    )


def env_for(tmp_path: Path) -> dict[str, str]:
    return isolated_env(tmp_path)


def events(env: dict[str, str], sid: str) -> list[Event]:
    with Store(Path(env["NODWYN_HOME"])).open(sid) as log:
        return list(log.read(1))


def recipes(log: list[Event]) -> list[str]:
    return [e.data["recipe"]["version"] for e in log if e.kind in ("session.start", "session.resume")]


def reads(n: int) -> list[dict[str, Any]]:
    return [
        {
            "text": f"step {k}",
            "calls": [{"name": "shell", "id": f"c{k}", "arguments": {"command": f"cat f{k}"}}],
        }
        for k in range(n)
    ] + [{"text": "read them all"}]


@pytest.fixture
def big_workspace(workspace: Path) -> Path:
    for k in range(24):
        (workspace / f"f{k}").write_text("".join(f"file {k} line {i} {'x' * 40}\n" for i in range(60)))
    return workspace


@pytest.mark.needs("bwrap")
def test_a_v20_session_sends_run_markers_and_recall_brings_a_unit_back(
    tmp_path: Path, big_workspace: Path
) -> None:
    env = env_for(tmp_path)
    with FakeServer(api="openai-chat", script=reads(20)) as fake:
        config(tmp_path / "config.toml", fake.url)
        opened = open_agent(env=env, workspace=big_workspace, yes=True, recipe_version="window-v20")
        sid = opened.agent.session_id
        assert opened.agent.user_turn("Read the files f0 to f19.").text == "read them all"
        opened.close()
        bodies = [r.body for r in fake.requests if r.path.endswith("/chat/completions")]
    log = events(env, sid)
    assert recipes(log) == ["window-v20"]
    trims = [e for e in log if e.kind == "llm.req" and e.data.get("trim")]
    assert trims and all("target" in e.data for e in trims)
    # the last request on the wire shows one marker naming the run of units it replaces
    wire = [m.get("content") for m in bodies[-1]["messages"] if m["role"] == "assistant"]
    runs = [m for t in wire if isinstance(t, str) and (m := RUN.fullmatch(t))]
    assert len(runs) == 1
    first, last = int(runs[0].group(1)), int(runs[0].group(2))
    by_seq = {e.seq: e for e in log}
    assert by_seq[first].kind == by_seq[last].kind == "llm.resp"
    inside = next(s for s in range(first + 1, last) if by_seq[s].kind == "llm.req")
    reply = next(s for s in range(inside, last + 1) if by_seq[s].kind == "llm.resp")
    result = next(e for e in log if e.kind == "tool.result" and e.seq > reply)

    # resumed without --recipe: the session keeps v20; the model recalls a seq inside the run
    script: list[dict[str, Any]] = [
        {"calls": [{"name": "recall", "id": "r1", "arguments": {"seq": inside}}]},
        {"text": "recalled"},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        config(tmp_path / "config.toml", fake.url)
        opened = open_agent(env=env, workspace=big_workspace, resume=sid, yes=True)
        assert opened.agent.settings.recipe.version == 20
        assert opened.agent.user_turn("What was in that one?").text == "recalled"
        opened.close()
    log = events(env, sid)
    assert recipes(log) == ["window-v20", "window-v20"]
    back = next(e for e in log if e.kind == "tool.result" and e.data["call_id"] == "r1")
    assert not back.data["error"]
    assert f"[reply seq {reply}]" in back.data["text"]
    assert f"[result seq {result.seq} of shell]" in back.data["text"]
    assert result.data["text"] in back.data["text"]
    with Store(Path(env["NODWYN_HOME"])).open(sid) as stored:
        for e in log:
            if e.kind == "llm.req":
                assert replay_request(stored, e.seq).digest == e.data["digest"]


def test_new_sessions_start_on_v21_and_v19_and_v20_sessions_resume_on_their_own_unless_asked(
    tmp_path: Path, workspace: Path
) -> None:
    env = env_for(tmp_path)
    script = [{"text": w} for w in ("one", "two", "three", "four", "five")]
    with FakeServer(api="openai-chat", script=script) as fake:
        config(tmp_path / "config.toml", fake.url)
        fresh = open_agent(env=env, workspace=workspace, yes=True)
        new_sid = fresh.agent.session_id
        fresh.agent.user_turn("hello")
        fresh.close()
        old = open_agent(env=env, workspace=workspace, yes=True, recipe_version="window-v19")
        sid = old.agent.session_id  # a session as a build before v20 started it
        old.agent.user_turn("hello")
        old.close()
        for asked in (None, None, "window-v20"):
            opened = open_agent(env=env, workspace=workspace, resume=sid, yes=True, recipe_version=asked)
            opened.agent.user_turn("again")
            opened.close()
        # a v20 session (this one, once asked for v20) resumes on v20 when nothing is asked
        opened = open_agent(env=env, workspace=workspace, resume=sid, yes=True)
        opened.close()
    assert DEFAULT_VERSION == 22
    assert recipes(events(env, new_sid)) == ["window-v22"]
    assert recipes(events(env, sid)) == ["window-v19", "window-v19", "window-v19", "window-v20", "window-v20"]
    # (tests/conftest.py replays every request of both sessions on the recipe each recorded)


def test_an_unknown_recipe_is_refused_before_a_session_starts(tmp_path: Path, workspace: Path) -> None:
    env = env_for(tmp_path)
    config(tmp_path / "config.toml", "http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="recipe 'window-v23' is not one this nodwyn runs"):
        open_agent(env=env, workspace=workspace, yes=True, recipe_version="window-v23")
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("*.jsonl"))
