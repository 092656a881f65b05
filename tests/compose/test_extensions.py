from pathlib import Path

import pytest

from nodwyn.agent.tools import ToolContext
from nodwyn.compose.extensions import load_extensions, trust
from nodwyn.errors import ConfigError

EXT = """
def count(args, ctx):
    return str(len(args["text"].split()))

nodwyn.tool("word-count", "Count words.", {"type": "object", "properties": {"text": {"type": "string"}},
            "required": ["text"]}, count)
nodwyn.task_header = "# Task (from %s)"
"""


def test_user_and_trusted_workspace_files_load(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    user = tmp_path / "cfg" / "nodwyn" / "extensions"
    user.mkdir(parents=True)
    (user / "a.py").write_text(EXT % "user")
    ws = tmp_path / "ws"
    (ws / ".nodwyn").mkdir(parents=True)
    (ws / ".nodwyn" / "b.py").write_text('nodwyn.plan_header = "# Plan (workspace)"\n')
    ext = load_extensions(ws, env)
    assert list(ext.tools) == ["word-count"] and ext.task_header == "# Task (from user)"
    assert ext.plan_header is None
    assert (
        len(ext.messages) == 1
        and "not trusted" in ext.messages[0]
        and f"nodwyn trust {ws}" in ext.messages[0]
    )
    ctx = ToolContext(workspace=ws, read_budget_tokens=10, approve=lambda t, w: True)
    assert ext.tools["word-count"].run({"text": "a b c"}, ctx).text == "3"

    trust(ws, env)
    ext = load_extensions(ws, env)
    assert ext.plan_header == "# Plan (workspace)" and ext.messages == ()
    assert [p.name for p in ext.loaded] == ["a.py", "b.py"]


def test_a_broken_extension_names_its_file_and_line(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    user = tmp_path / "nodwyn" / "extensions"
    user.mkdir(parents=True)
    (user / "bad.py").write_text("x = 1\nraise RuntimeError('boom')\n")
    with pytest.raises(ConfigError, match=r"bad.py:2: extension file failed: RuntimeError: boom"):
        load_extensions(tmp_path, env)
    (user / "bad.py").write_text("def (:\n")
    with pytest.raises(ConfigError, match=r"bad.py:1: extension file has a syntax error"):
        load_extensions(tmp_path, env)


def test_an_extension_tool_may_not_take_a_built_in_name(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    user = tmp_path / "nodwyn" / "extensions"
    user.mkdir(parents=True)
    (user / "clash.py").write_text(
        "def run(args, ctx):\n    return 'x'\n\nnodwyn.tool('fs-read', 'Mine.', {'type': 'object'}, run)\n"
    )
    with pytest.raises(ConfigError, match=r"clash.py:4: tool 'fs-read' has the name of a built-in tool"):
        load_extensions(tmp_path, env)
