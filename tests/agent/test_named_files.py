"""What a session on an in-process model is offered and shown (ADRs 0440, 0442): the files a task
names come with it, an edit without its block goes back to the model as a tool error saying the
shape expected, and the catalog's edit tools follow the entry's prompt format. Over a real fake
(ScriptedBackend); the requests are checked as they went over the wire and the log replays."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from nodwyn.agent.loop import Agent
from nodwyn.agent.named import HEAD, IMPORTED, LISTED, MAX_CHARS, imported_paths, with_named_files
from nodwyn.agent.settings import AgentSettings
from nodwyn.agent.tools import SUB_AGENT, ToolContext, builtin_tools, catalog, run_call
from nodwyn.compose.config import BUILTINS
from nodwyn.compose.setup import edits_of, offered_builtins
from nodwyn.log import Store
from nodwyn.record import start_session
from nodwyn.replay.exact import verify_all
from nodwyn.testing import ScriptedBackend, Step, recipe
from nodwyn.values.content import TextPart, ToolCall, ToolMessage, UserMessage
from nodwyn.values.request import Request


def _ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace=ws, read_budget_tokens=4000, approve=lambda tool, what: True)


def test_the_files_a_task_names_follow_it_as_fs_read_shows_them(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "greet.py").write_text("print('hi')\n")
    (ws / "pkg" / "util.py").write_text("X = 1")
    (ws / "big.txt").write_text("x" * (MAX_CHARS + 1))
    (tmp_path / "outside.py").write_text("secret\n")
    text = "Fix greet.py and pkg/util.py, not big.txt, missing.py or ../outside.py. Use greet.py."
    out = with_named_files(text, builtin_tools(), _ctx(ws))
    assert out == f"{text}\n\n{HEAD}\n\n--- greet.py\nprint('hi')\n\n--- pkg/util.py\nX = 1\n"
    assert with_named_files("List the files.", builtin_tools(), _ctx(ws)) == "List the files."


def test_the_project_files_a_named_python_file_imports_follow_it(tmp_path: Path) -> None:
    """The realistic set's two-reads: server.py imports its port from settings.py (ADR 0445)."""
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "server.py").write_text("import os\nfrom settings import DEFAULTS\nimport pkg.meta\n")
    (ws / "settings.py").write_text('DEFAULTS = {"port": 8472}\n')
    (ws / "pkg" / "meta.py").write_text("V = 1\n")
    out = with_named_files("Which port does server.py use?", builtin_tools(), _ctx(ws))
    assert out == (
        f"Which port does server.py use?\n\n{HEAD}\n\n--- server.py\n"
        "import os\nfrom settings import DEFAULTS\nimport pkg.meta\n"
        f"\n{IMPORTED}\n\n--- settings.py\n"
        'DEFAULTS = {"port": 8472}\n\n--- pkg/meta.py\nV = 1\n'
    )
    assert imported_paths("server.txt", "import settings", _ctx(ws)) == []  # Python files only
    both = with_named_files("Read server.py and settings.py.", builtin_tools(), _ctx(ws))
    assert both.count("--- settings.py") == 1 and "--- pkg/meta.py" in both  # named ones once


def _user(request: Request) -> str:
    m = next(m for m in request.messages if isinstance(m, UserMessage))
    return "".join(p.text for p in m.parts if isinstance(p, TextPart))


def _last_result(request: Request) -> ToolMessage:
    m = request.messages[-1]
    assert isinstance(m, ToolMessage)
    return m


def test_the_top_folder_is_listed_only_when_the_task_names_no_file_or_folder(tmp_path: Path) -> None:
    """A task naming ``src/pkg`` was answered with the root's listing the first message showed
    (the README's question, ADR 0444): the listing is for a task that names nothing."""
    ws = tmp_path / "ws"
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "notes.txt").write_text("n\n")
    tools = builtin_tools()
    vague = with_named_files("What does this project do?", tools, _ctx(ws), listing=True)
    assert vague.startswith(f"What does this project do?\n\n{LISTED}\n") and "src/" in vague
    for named in ("Which packages are in src/pkg? List the folder.", "What is in ./src?", "Read notes.txt."):
        assert LISTED not in with_named_files(named, tools, _ctx(ws), listing=True), named


def test_an_edit_without_its_block_is_a_tool_error_and_the_turn_goes_on(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "greet.py").write_text("print('hi')\n")
    tools = builtin_tools("blocks")
    rec = recipe(tools=catalog(tools.values()))
    script = [
        Step(
            reply={"calls": [{"name": "fs-write", "arguments": {"path": "greet.py"}}]},
            expect=lambda r: (
                (f"Make greet.py shout.\n\n{HEAD}" in _user(r) and LISTED not in _user(r))
                and "--- greet.py\nprint('hi')\n" in _user(r)
            ),
        ),
        Step(
            reply={
                "calls": [{"name": "fs-write", "arguments": {"path": "greet.py", "content": "print('HI')\n"}}]
            },
            expect=lambda r: (
                _last_result(r).error
                and "no 'content' block followed the call, so nothing was done" in _last_result(r).text
                and 'call it with {"path": "greet.py"}, then' in _last_result(r).text
                and "```" in _last_result(r).text
            ),
        ),
        Step(reply={"text": "Done."}, expect=lambda r: not _last_result(r).error),
    ]
    store = Store(tmp_path / "home", fsync=False)
    with ScriptedBackend(script) as backend:
        settings = AgentSettings(
            recipe=rec,
            tools=tools,
            models={"fake": backend.settings},
            model="fake",
            workspace=ws,
            named_files=True,
        )
        log = start_session(store, rec, "fake")
        agent = Agent(log=log, settings=settings, backend_for=lambda _: backend, approve=lambda t, w: True)
        try:
            result = agent.user_turn("Make greet.py shout.")
            assert result.text == "Done." and result.stopped is None
            assert (ws / "greet.py").read_text() == "print('HI')\n"
            assert all(v.error is None for v in verify_all(log))
        finally:
            log.close()


def test_the_prompt_format_decides_the_edit_tools_and_in_process_models_get_no_sub_agent() -> None:
    local, tiny = BUILTINS["local"], BUILTINS["local-tiny"]
    assert edits_of(local) == "search" and edits_of(tiny) == "json"
    assert edits_of(dataclasses.replace(local, edits="json")) == "json"
    offered = offered_builtins(local)
    assert SUB_AGENT not in offered and SUB_AGENT in builtin_tools()
    assert offered["fs-edit"].spec.parameters["properties"]["old"]["x-block"] == "search"
    assert "x-block" not in str(offered["fs-write"].spec.parameters)
    both = offered_builtins(dataclasses.replace(local, edits="blocks"))
    assert both["fs-write"].spec.parameters["properties"]["content"]["x-block"] == "fence"
    assert "x-block" not in str(offered_builtins(tiny)["fs-edit"].spec.parameters)


def test_shell_output_shows_workspace_paths_relative_to_it(tmp_path: Path) -> None:
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    call = ToolCall(id="c", name="shell", arguments='{"command": "echo \\"$PWD/test_a.py\\"; pwd"}')
    out = run_call(call, builtin_tools(), _ctx(ws))
    assert out.text == f"test_a.py\n{ws}\n[exit 0]", out.text
