"""Earlier requests keep the header they had: a resume whose extension files changed the task header
shows the earlier messages under the header they were sent with, so the first request after the
resume extends the last one before it; only messages from the resume on take the new header. Older
recipes replay as built."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from nodwyn.compose.setup import open_agent
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.record import Recorder
from nodwyn.replay.exact import replay_request
from nodwyn.testing import isolated_env
from nodwyn.values.content import Origin, TextPart, UserMessage
from nodwyn.values.events import LlmResp, SessionResume, SessionStart, UserMsg
from nodwyn.values.recipe import Flag, Recipe, WindowLimits
from nodwyn.values.request import Response


def _env(tmp_path: Path, url: str) -> dict[str, str]:
    config = tmp_path / "config.toml"
    config.write_text(
        f'[control]\nmodel = "m"\n\n[models.m]\napi = "openai-chat"\nmodel = "fake-model"\n'
        f'base_url = "{url}"\ncontext_size = 32000\n'
    )
    return isolated_env(tmp_path)


def _headers(tmp_path: Path, task: str, plan: str) -> None:
    ext = tmp_path / "cfg" / "nodwyn" / "extensions"
    ext.mkdir(parents=True, exist_ok=True)
    (ext / "headers.py").write_text(f"nodwyn.task_header = {task!r}\nnodwyn.plan_header = {plan!r}\n")


def _user_texts(body: dict[str, object]) -> list[str]:
    messages = body["messages"]
    assert isinstance(messages, list)
    return [m["content"] for m in messages if m["role"] == "user"]


def test_a_resume_that_changes_the_task_header_keeps_the_earlier_messages_headers(
    tmp_path: Path, workspace: Path
) -> None:
    script = [{"text": "a plan: read calc.py"}, {"text": "first answer"}, {"text": "second answer"}]
    with FakeServer(api="openai-chat", script=script) as fake:
        env = _env(tmp_path, fake.url)
        _headers(tmp_path, "# Job", "# Steps")
        opened = open_agent(env=env, workspace=workspace)
        try:
            assert opened.agent.user_turn("What does add do?", plan_first=True).text == "first answer"
            sid = opened.agent.session_id
        finally:
            opened.close()
        _headers(tmp_path, "# Errand", "# Route")
        opened = open_agent(env=env, workspace=workspace, resume=sid)
        try:
            assert opened.agent.user_turn("And sub?").text == "second answer"
        finally:
            opened.close()
        bodies = [r.body for r in fake.requests]

    before, after = bodies[1], bodies[2]
    assert _user_texts(before) == [
        "# Job\n\nWhat does add do?",
        _user_texts(before)[1],  # the planner's ask, under the task header too
        "# Steps\n\na plan: read calc.py",
    ]
    assert _user_texts(before)[1].startswith("# Job\n\n")
    # the request after the resume is the one before it with messages appended
    assert after["messages"][: len(before["messages"])] == before["messages"]
    assert _user_texts(after)[-1] == "# Errand\n\nAnd sub?"
    with Store(tmp_path / "home").open(sid) as log:
        events = list(log.read(1))
        resumed = [e for e in events if e.kind == "session.resume"][0]
        assert resumed.data["recipe"]["flags"] == ["kept_headers", "superseded"]
        last = [e for e in events if e.kind == "llm.req"][-1]
        assert "moved" not in last.data
        rebuilt = replay_request(log, last.seq).request
    assert rebuilt.messages[-1] == UserMessage(parts=(TextPart(text="# Errand\n\nAnd sub?"),))


def test_a_recipe_without_the_flag_builds_every_message_under_the_current_header(tmp_path: Path) -> None:
    """Logs recorded before the fix: a resume's recipe names no flag, and its requests were built
    with every message under the new header; they still build, and replay, that way."""
    base = Recipe(
        version=19,
        system="sys",
        tools=(),
        limits=WindowLimits(
            high_water=20000, low_water=10000, max_result_tokens=3000, output_reserve=1000, ceiling=30000
        ),
        context_size=32000,
        task_header="# Job",
    )
    origin = Origin(model="m", url="http://127.0.0.1:9/v1")
    for flags, first in (((), "# Errand\n\none"), ((Flag.KEPT_HEADERS,), "# Job\n\none")):
        with Store(tmp_path / "home").create() as log:
            rec = Recorder(log)
            start = replace(base, extra_flags=flags)
            rec.append(SessionStart(recipe=start, model="m"))
            rec.append(UserMsg(text="one"))
            _, req = rec.request("main", origin)
            rec.append(LlmResp(req=req.seq, response=Response(text="ok")))
            new = replace(start, task_header="# Errand")
            rec.append(SessionResume(recipe=new, model="m"))
            rec.append(UserMsg(text="two"))
            build, req = rec.request("main", origin)
            texts = [
                p.text
                for m in build.request.messages
                if isinstance(m, UserMessage)
                for p in m.parts[:1]
                if isinstance(p, TextPart)
            ]
            assert texts == [first, "# Errand\n\ntwo"]
            assert replay_request(log, req.seq).digest == req.data["digest"]
