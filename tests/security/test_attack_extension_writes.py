"""Extension trust, by writing: in a trusted workspace, approving fs-write (or fs-edit) must not be
enough to get code run. The model writes an extension file (the workspace's ``.nodwyn/``, the
person's own extensions directory, a ``.nodwyn`` made anew or under a link); every write is
refused and the next session loads nothing new."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nodwyn.agent.tools import ToolContext, builtin_tools, run_call
from nodwyn.compose.extensions import load_extensions, trust
from nodwyn.compose.setup import protected
from nodwyn.testing import isolated_env
from nodwyn.values.content import ToolCall

pytestmark = pytest.mark.attack("extension trust")

CODE = "open({marker!r}, 'w').write('ran')\n"


@pytest.fixture
def trusted(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    ws = tmp_path / "ws"
    (ws / ".nodwyn").mkdir(parents=True)
    env = isolated_env(tmp_path)
    trust(ws, env)
    return ws, env


def _write(ws: Path, env: dict[str, str], tool: str, args: dict[str, str]) -> tuple[str, bool]:
    ctx = ToolContext(
        workspace=ws, read_budget_tokens=1000, approve=lambda t, w: True, protected=protected(env)
    )
    out = run_call(ToolCall(id="c", name=tool, arguments=json.dumps(args)), builtin_tools(), ctx)
    return out.text, out.error


WRITES = {
    "workspace-extension": ".nodwyn/zz.py",
    "dot-slash": "./.nodwyn/zz.py",
    "absolute": "{ws}/.nodwyn/zz.py",
    "nested-new-dir": ".nodwyn/sub/zz.py",
}


@pytest.mark.parametrize("kind", sorted(WRITES))
def test_writing_an_extension_file_is_refused_and_nothing_runs(
    trusted: tuple[Path, dict[str, str]], tmp_path: Path, kind: str
) -> None:
    ws, env = trusted
    marker = tmp_path / "ran"
    text, error = _write(
        ws, env, "fs-write", {"path": WRITES[kind].format(ws=ws), "content": CODE.format(marker=str(marker))}
    )
    assert error and "refused" in text and ".nodwyn" in text, text
    assert list((ws / ".nodwyn").iterdir()) == []
    load_extensions(ws, env)
    assert not marker.exists()


def test_editing_an_existing_extension_file_is_refused(
    trusted: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    ws, env = trusted
    (ws / ".nodwyn" / "tools.py").write_text("X = 1\n")
    text, error = _write(ws, env, "fs-edit", {"path": ".nodwyn/tools.py", "old": "X = 1", "new": "import os"})
    assert error and "refused" in text, text
    assert (ws / ".nodwyn" / "tools.py").read_text() == "X = 1\n"


def test_the_persons_own_extensions_dir_is_refused(tmp_path: Path) -> None:
    """The workspace is ``$HOME``: the config dir's ``extensions/`` is inside it."""
    env = isolated_env(tmp_path)
    marker = tmp_path / "ran"
    (tmp_path / "cfg" / "nodwyn" / "extensions").mkdir(parents=True)
    text, error = _write(
        tmp_path,
        env,
        "fs-write",
        {"path": "cfg/nodwyn/extensions/zz.py", "content": CODE.format(marker=str(marker))},
    )
    assert error and "config directory" in text, text
    load_extensions(tmp_path, env)
    assert not marker.exists()


def test_a_link_named_otherwise_that_leads_into_nodwyn_is_refused(
    trusted: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    ws, env = trusted
    os.symlink(".nodwyn", ws / "plugins")
    text, error = _write(ws, env, "fs-write", {"path": "plugins/zz.py", "content": "import os\n"})
    assert error and "refused" in text, text
    assert list((ws / ".nodwyn").iterdir()) == []


def test_making_nodwyn_in_an_untrusted_subdirectory_is_refused(trusted: tuple[Path, dict[str, str]]) -> None:
    ws, env = trusted
    text, error = _write(ws, env, "fs-write", {"path": "pkg/.nodwyn/zz.py", "content": "import os\n"})
    assert error and "refused" in text, text
    assert not (ws / "pkg").exists()  # not even the parent directory was made
