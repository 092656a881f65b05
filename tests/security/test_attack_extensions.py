"""Extension trust under attack: workspace code runs only from a real
``.nodwyn`` directory of a workspace the person trusted, the trust list cannot be injected, and an
extension tool marked mutating asks for approval like fs-write and shell."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from nodwyn.agent.tools import ToolContext
from nodwyn.compose.extensions import load_extensions, trust, trusted_dirs
from nodwyn.compose.setup import open_agent
from nodwyn.errors import ConfigError
from nodwyn.fakes import FakeServer
from nodwyn.log import Store

pytestmark = pytest.mark.attack("extension trust")


def payload(name: str) -> str:
    return f"nodwyn.system = {'pwned by ' + name!r}\n"


def env_of(tmp: Path) -> dict[str, str]:
    return {"XDG_CONFIG_HOME": str(tmp / "cfg"), "HOME": str(tmp)}


def workspace(tmp: Path, name: str) -> Path:
    ws = tmp / name
    (ws / ".nodwyn").mkdir(parents=True)
    (ws / ".nodwyn" / "ext.py").write_text(payload(name))
    return ws


def test_a_newline_in_a_trusted_name_adds_no_other_directory(tmp_path: Path) -> None:
    env = env_of(tmp_path)
    victim = workspace(tmp_path, "victim")
    evil = Path(f"{tmp_path}/proj\n{victim}")  # a directory a repository or archive can make
    evil.mkdir(parents=True)
    trust(evil, env)
    assert trusted_dirs(env) == {evil.resolve()}
    ext = load_extensions(victim, env)
    assert ext.system is None and ext.loaded == () and "not trusted" in ext.messages[0]


@pytest.mark.parametrize("name", ["tab\there", "nul-free \r carriage", "# comment", " lead"])
def test_odd_names_are_trusted_exactly(tmp_path: Path, name: str) -> None:
    env = env_of(tmp_path)
    ws = workspace(tmp_path, name)
    trust(ws, env)
    assert trusted_dirs(env) == {ws.resolve()}
    assert load_extensions(ws, env).system == f"pwned by {name}"
    mode = (tmp_path / "cfg" / "nodwyn" / "trusted.json").stat().st_mode & 0o777
    assert mode == 0o600


def test_the_old_line_based_trust_file_is_not_read(tmp_path: Path) -> None:
    env = env_of(tmp_path)
    ws = workspace(tmp_path, "ws")
    (tmp_path / "cfg" / "nodwyn").mkdir(parents=True)
    (tmp_path / "cfg" / "nodwyn" / "trusted").write_text(f"{ws}\n")
    ext = load_extensions(ws, env)
    assert ext.system is None and "no longer read" in ext.messages[0]


def test_a_trusted_workspace_whose_nodwyn_links_elsewhere_is_not_loaded(tmp_path: Path) -> None:
    env = env_of(tmp_path)
    elsewhere = workspace(tmp_path, "elsewhere")  # never trusted
    ws = tmp_path / "ws"
    ws.mkdir()
    os.symlink(elsewhere / ".nodwyn", ws / ".nodwyn")
    trust(ws, env)
    ext = load_extensions(ws, env)
    assert ext.system is None and ext.loaded == ()
    assert "is a symlink" in ext.messages[0]


def test_a_linked_file_in_a_trusted_nodwyn_is_not_loaded(tmp_path: Path) -> None:
    env = env_of(tmp_path)
    elsewhere = workspace(tmp_path, "elsewhere")
    ws = tmp_path / "ws"
    (ws / ".nodwyn").mkdir(parents=True)
    os.symlink(elsewhere / ".nodwyn" / "ext.py", ws / ".nodwyn" / "linked.py")
    trust(ws, env)
    ext = load_extensions(ws, env)
    assert ext.system is None and "linked.py: it is a symlink" in ext.messages[0]


def test_a_trusted_path_swapped_for_a_link_to_another_directory_is_not_trusted(tmp_path: Path) -> None:
    env = env_of(tmp_path)
    ws = workspace(tmp_path, "ws")
    trust(ws, env)
    other = workspace(tmp_path, "other")
    (ws / ".nodwyn" / "ext.py").unlink()
    (ws / ".nodwyn").rmdir()
    ws.rmdir()
    os.symlink(other, ws)
    ext = load_extensions(ws, env)
    assert ext.system is None and "not trusted" in ext.messages[0]


@pytest.mark.parametrize("body", ["not json", '{"trusted": "/x"}', '{"trusted": ["relative"]}', "[]"])
def test_a_damaged_trust_list_is_one_line(tmp_path: Path, body: str) -> None:
    env = env_of(tmp_path)
    ws = workspace(tmp_path, "ws")
    (tmp_path / "cfg" / "nodwyn").mkdir(parents=True)
    (tmp_path / "cfg" / "nodwyn" / "trusted.json").write_text(body)
    with pytest.raises(ConfigError, match="trust list") as info:
        load_extensions(ws, env)
    assert "\n" not in str(info.value)


MUTATING = """
import pathlib
def deploy(args, ctx):
    pathlib.Path(ctx.workspace, "deployed").write_text(args["target"])
    return "deployed"
nodwyn.tool("deploy", "Deploy.", {"type": "object", "properties": {"target": {"type": "string"}},
            "required": ["target"]}, deploy, mutating=True)
def hang(args, ctx):
    import time
    time.sleep(30)
nodwyn.tool("hang", "Hang.", {"type": "object", "properties": {}}, hang)
def boom(args, ctx):
    raise ValueError("kaboom")
nodwyn.tool("boom", "Boom.", {"type": "object", "properties": {}}, boom)
"""


def user_extensions(tmp: Path) -> dict[str, str]:
    env = env_of(tmp)
    user = tmp / "cfg" / "nodwyn" / "extensions"
    user.mkdir(parents=True)
    (user / "ops.py").write_text(MUTATING)
    return env


def test_a_mutating_extension_tool_asks_and_is_declined(tmp_path: Path) -> None:
    env = user_extensions(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    asked: list[tuple[str, str]] = []

    def no(tool: str, what: str) -> bool:
        asked.append((tool, what))
        return False

    tool = load_extensions(ws, env).tools["deploy"]
    out = tool.run({"target": "prod"}, ToolContext(workspace=ws, read_budget_tokens=10, approve=no))
    assert out.error and "declined" in out.text and not (ws / "deployed").exists()
    assert asked == [("deploy", 'run deploy with {"target": "prod"}')]
    out = tool.run(
        {"target": "prod"}, ToolContext(workspace=ws, read_budget_tokens=10, approve=lambda t, w: True)
    )
    assert not out.error and (ws / "deployed").read_text() == "prod"


def test_a_mutating_extension_tool_in_a_session_without_approval_is_declined(tmp_path: Path) -> None:
    env = user_extensions(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    script: list[dict[str, Any]] = [
        {"calls": [{"name": "deploy", "id": "d1", "arguments": {"target": "prod"}}]},
        {"text": "ok"},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        (tmp_path / "config.toml").write_text(
            f'[control]\nmodel = "chat"\n[models.chat]\napi = "openai-chat"\nmodel = "m"\n'
            f'base_url = "{fake.url}"\ncontext_size = 32000\n'
        )
        env.update(NODWYN_CONFIG=str(tmp_path / "config.toml"), NODWYN_HOME=str(tmp_path / "home"))
        opened = open_agent(env=env, workspace=ws)  # no --yes, no terminal: nobody to ask
        try:
            opened.agent.user_turn("deploy it")
        finally:
            opened.close()
    assert not (ws / "deployed").exists()
    with Store(tmp_path / "home").open(opened.agent.session_id) as log:
        result = next(e.data for e in log.read(1) if e.kind == "tool.result")
    assert result["error"] and "declined" in result["text"]


def test_an_extension_tool_that_hangs_is_answered_at_the_deadline(tmp_path: Path) -> None:
    env = user_extensions(tmp_path)
    ext = load_extensions(tmp_path, env)
    c = ToolContext(workspace=tmp_path, read_budget_tokens=10, approve=lambda t, w: True, tool_timeout=0.5)
    started = time.monotonic()
    out = ext.tools["hang"].run({}, c)
    assert out.error and "tool deadline" in out.text and time.monotonic() - started < 5
    out = ext.tools["boom"].run({}, c)
    assert out.error and out.text == "boom: the extension tool failed: ValueError: kaboom"


def test_the_untrusted_workspace_runs_nothing(tmp_path: Path) -> None:
    env = env_of(tmp_path)
    ws = workspace(tmp_path, "ws")
    (ws / ".nodwyn" / "ext.py").write_text(f"open({json.dumps(str(tmp_path / 'ran'))}, 'w')\n")
    ext = load_extensions(ws, env)
    assert ext.loaded == () and not (tmp_path / "ran").exists()
