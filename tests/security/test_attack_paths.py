"""File-tool confinement: paths a model or a cloned repository could use to reach outside the
workspace. Every file tool, every way out; the outside file must be neither read nor changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodwyn.agent.tools import ToolContext, builtin_tools, run_call
from nodwyn.values.content import ToolCall

pytestmark = pytest.mark.attack("file-tool confinement")

SECRET = "outside-secret-4d1f"


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    return ws, outside


def call(ws: Path, name: str, **args: object) -> tuple[str, bool]:
    ctx = ToolContext(workspace=ws, read_budget_tokens=10_000, approve=lambda t, w: True, shell_timeout=5)
    out = run_call(ToolCall(id="c1", name=name, arguments=json.dumps(args)), builtin_tools(), ctx)
    return out.text, out.error


def _attempts(target: str) -> list[tuple[str, dict[str, object]]]:
    return [
        ("fs-read", {"path": target}),
        ("fs-list", {"path": target}),
        ("fs-grep", {"pattern": "outside", "path": target}),
        ("fs-write", {"path": target, "content": "pwned"}),
        ("fs-edit", {"path": target, "old": SECRET, "new": "pwned"}),
    ]


TARGETS = {
    "dotdot": "../outside/secret.txt",
    "dotdot-inner": "sub/../../outside/secret.txt",
    "absolute": "{outside}/secret.txt",
    "absolute-dir": "{outside}",
    "absolute-dotdot": "{ws}/../outside/secret.txt",
    "double-slash": "/{outside}/secret.txt",
    "proc-root": "/proc/self/root{outside}/secret.txt",
    "proc-cwd": "/proc/self/cwd/../outside/secret.txt",
    "dot-dotdot": "./../outside/secret.txt",
    "nul": "secret.txt\x00../../outside/secret.txt",
    "empty": "",
}


@pytest.mark.parametrize("tool", ["fs-read", "fs-list", "fs-grep", "fs-write", "fs-edit"])
@pytest.mark.parametrize("kind", sorted(TARGETS))
def test_path_outside_is_refused(places: tuple[Path, Path], kind: str, tool: str) -> None:
    ws, outside = places
    (ws / "sub").mkdir()
    target = TARGETS[kind].format(outside=outside, ws=ws)
    args = dict(_attempts(target))[tool]
    text, error = call(ws, tool, **args)
    if kind == "empty" and tool in ("fs-list", "fs-grep"):
        assert not error, text  # an empty optional path is the workspace itself, not outside it
    else:
        assert error, text
    assert SECRET not in text
    assert (outside / "secret.txt").read_text() == SECRET + "\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_a_backslash_path_is_a_name_inside_the_workspace(places: tuple[Path, Path]) -> None:
    ws, outside = places
    text, error = call(ws, "fs-write", path="..\\outside\\secret.txt", content="x")
    assert not error, text
    assert (ws / "..\\outside\\secret.txt").read_text() == "x"
    assert (outside / "secret.txt").read_text() == SECRET + "\n"
