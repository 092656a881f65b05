"""The project's AGENTS.md reaches the request as part of the recipe's fixed system prompt: read once
at session start (the workspace's and its parents' up to the repository root, nearest last; CLAUDE.md
where a folder has no AGENTS.md), the same bytes in every request, replayed from the log, and a
resume whose files changed records the new prompt. Capped with a note; turned off by --no-project-doc
and [control] project_doc = false."""

from __future__ import annotations

from pathlib import Path

from nodwyn.compose.project_doc import MAX_BYTES, cap_for, read_project_doc
from nodwyn.compose.setup import BASE_SYSTEM, open_agent
from nodwyn.log import Store, data_root
from nodwyn.replay.exact import replay_request, verify_all
from nodwyn.testing import ScriptedBackend, isolated_env
from nodwyn.values.events import LLM_REQ, SESSION_RESUME, SessionResume, decode


def _config(tmp_path: Path, url: str, extra: str = "", context_size: int = 32000) -> dict[str, str]:
    (tmp_path / "config.toml").write_text(
        f'[control]\nmodel = "m"\n{extra}\n[models.m]\napi = "openai-chat"\nmodel = "fake-model"\n'
        f'base_url = "{url}"\ncontext_size = {context_size}\n'
    )
    return isolated_env(tmp_path)


def _system(body: dict[str, object]) -> str:
    messages = body["messages"]
    assert isinstance(messages, list)
    assert messages[0]["role"] == "system"
    return str(messages[0]["content"])


def test_agents_md_is_in_every_request_replays_and_a_resume_records_the_changed_file(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    ws = repo / "pkg"
    ws.mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / "AGENTS.md").write_text("Run the tests with make test.\n")
    (ws / "AGENTS.md").write_text("Always answer in French.\n")
    (ws / "CLAUDE.md").write_text("not read: AGENTS.md is here\n")
    with ScriptedBackend([{"text": "bonjour"}, {"text": "encore"}, {"text": "au revoir"}]) as model:
        env = _config(tmp_path, model.url)
        opened = open_agent(env=env, workspace=ws, backend_for=lambda _: model)
        try:
            assert opened.project_doc is not None
            assert opened.project_doc.banner() == "instructions: ../AGENTS.md, AGENTS.md, 0.1 KB"
            opened.agent.user_turn("hello")
            opened.agent.user_turn("again")
            sid = opened.agent.session_id
        finally:
            opened.close()
        (ws / "AGENTS.md").write_text("Always answer in German.\n")
        opened = open_agent(env=env, workspace=ws, backend_for=lambda _: model, resume=sid)
        try:
            opened.agent.user_turn("and now")
        finally:
            opened.close()
        first, second, third = (_system(r.body) for r in model.wire)
    assert first == second  # the same bytes in every request of the session
    assert first == (
        f"{BASE_SYSTEM}\n\n# Project instructions (../AGENTS.md)\n\nRun the tests with make test."
        "\n\n# Project instructions (AGENTS.md)\n\nAlways answer in French."
    )
    assert "not read" not in first
    assert third.endswith("Always answer in German.") and "French" not in third
    with Store(data_root(env)).open(sid) as log:
        events = list(log.read())
        reqs = [e.seq for e in events if e.kind == LLM_REQ]
        replayed = [replay_request(log, seq) for seq in reqs]
        assert all(v.error is None for v in verify_all(log))
    assert "Always answer in French." in replayed[0].request.system
    assert "Always answer in German." in replayed[2].request.system
    (resume,) = (decode(e) for e in events if e.kind == SESSION_RESUME)
    assert isinstance(resume, SessionResume) and resume.recipe is not None
    assert resume.recipe.system == replayed[2].request.system


def test_claude_md_where_there_is_no_agents_md_and_nothing_outside_a_repository(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "AGENTS.md").write_text("a parent's, but there is no repository: not read\n")
    (ws / "CLAUDE.md").write_text("Use tabs.\n")
    doc = read_project_doc(ws)
    assert doc is not None and doc.files == ("CLAUDE.md",)
    assert doc.text == "# Project instructions (CLAUDE.md)\n\nUse tabs."
    (ws / "CLAUDE.md").unlink()
    assert read_project_doc(ws) is None


def test_a_large_file_is_cut_with_a_note(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("x" * (MAX_BYTES * 2))
    doc = read_project_doc(ws)
    assert doc is not None and doc.cut
    assert doc.text.endswith(
        f"[the project instructions are cut here: {MAX_BYTES} of their {MAX_BYTES * 2 + 36} bytes are kept]"
    )
    assert doc.banner() == "instructions: AGENTS.md, 64.0 KB, cut to 32.0 KB"


def test_a_small_context_gets_an_eighth_of_it_as_instructions(tmp_path: Path) -> None:
    """An 18 KB AGENTS.md on an 8,192-token model (the local default) took two thirds of its context
    and left the task no room: the cap is an eighth of the context, 3,072 bytes there."""
    assert cap_for(8192) == 3072 and cap_for(32000) == 12000 and cap_for(1_000_000) == MAX_BYTES
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("Keep it short. " * 1200)  # 18,000 bytes
    with ScriptedBackend([{"text": "ok"}]) as model:
        env = _config(tmp_path, model.url, context_size=8192)
        opened = open_agent(env=env, workspace=ws, backend_for=lambda _: model)
        try:
            assert opened.project_doc is not None
            assert opened.project_doc.banner() == "instructions: AGENTS.md, 17.6 KB, cut to 3.0 KB"
            opened.agent.user_turn("hello")
        finally:
            opened.close()
        (system,) = (_system(r.body) for r in model.wire)
    assert system.endswith("[the project instructions are cut here: 3072 of their 18035 bytes are kept]")
    assert len(system.encode()) < len(BASE_SYSTEM.encode()) + 3072 + 100


def test_no_project_doc_and_the_control_setting_turn_it_off(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("Always answer in French.\n")
    with ScriptedBackend([{"text": "a"}, {"text": "b"}]) as model:
        env = _config(tmp_path, model.url)
        opened = open_agent(env=env, workspace=ws, backend_for=lambda _: model, project_doc=False)
        try:
            assert opened.project_doc is None
            opened.agent.user_turn("hi")
        finally:
            opened.close()
        env = _config(tmp_path, model.url, "project_doc = false\n")
        opened = open_agent(env=env, workspace=ws, backend_for=lambda _: model)
        try:
            opened.agent.user_turn("hi")
        finally:
            opened.close()
        assert [_system(r.body) for r in model.wire] == [BASE_SYSTEM, BASE_SYSTEM]
