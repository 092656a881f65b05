"""Hostile import sources (issue 21, item 9).

`nodwyn import PATH` reads files another agent wrote, or that someone planted: a FIFO named
`rollout-1.jsonl` must not hang it, a link to `/dev/zero` (or a device) named `*.jsonl`,
`*.traj.json` or `*.traj` must not eat memory, and a Claude Code `tool_use` input nested 1,000 deep
(or a Codex call's arguments, a trajectory's message) must not end it in a RecursionError. Each is
one line naming the file, exit 15, and no session is left behind. The real command runs, with a
memory limit and a timeout, so a hang or a flood fails the case instead of the machine.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from nodwyn.testing import isolated_env

pytestmark = pytest.mark.attack("import sources")

NODWYN = str(Path(sys.executable).parent / "nodwyn")
MEMORY = 1 << 30  # the import's address space: far more than it needs, far less than /dev/zero


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _import(tmp_path: Path, target: Path) -> subprocess.CompletedProcess[str]:
    env = isolated_env(tmp_path, PATH=os.environ.get("PATH", ""))
    done = subprocess.run(
        [NODWYN, "import", str(target)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limit,
        stdin=subprocess.DEVNULL,
    )
    sessions = Path(env["NODWYN_HOME"]) / "sessions"
    assert not sessions.exists() or not any(sessions.iterdir()), "a session was left behind"
    return done


def _refused(done: subprocess.CompletedProcess[str], name: str) -> None:
    assert done.returncode == 15, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "Error" not in done.stderr.split(":", 1)[0]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr[-2000:]
    assert name in lines[0]


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _urandom(path: Path) -> None:
    path.symlink_to("/dev/urandom")


PLANTS: dict[str, tuple[str, Callable[[Path], None]]] = {
    "fifo rollout": ("rollout-1.jsonl", _fifo),
    "fifo trajectory": ("run.traj.json", _fifo),
    "fifo swe-agent": ("run.traj", _fifo),
    "dev-zero jsonl": ("rollout-2.jsonl", _zero),
    "dev-zero traj.json": ("zero.traj.json", _zero),
    "dev-zero traj": ("zero.traj", _zero),
    "dev-urandom jsonl": ("session.jsonl", _urandom),
}


@pytest.mark.parametrize("case", list(PLANTS))
@pytest.mark.parametrize("given", ["folder", "file"])
def test_planted_special_file(tmp_path: Path, case: str, given: str) -> None:
    name, plant = PLANTS[case]
    runs = tmp_path / "runs"
    runs.mkdir()
    plant(runs / name)
    done = _import(tmp_path, runs if given == "folder" else runs / name)
    _refused(done, name)


DEEP = "@@deep@@"  # replaced by the nested value in the file's text (orjson writes 254 levels at most)


def _deep(depth: int) -> bytes:
    return b'{"a":' * depth + b'"leaf"' + b"}" * depth


def _dumps(doc: Any, depth: int) -> bytes:
    return orjson.dumps(doc).replace(orjson.dumps(DEEP), _deep(depth))


def _claude(tmp: Path, depth: int) -> Path:
    base = {"sessionId": "s1", "cwd": "/w", "version": "2.0.28", "isSidechain": False}
    lines = [
        {**base, "type": "user", "uuid": "u1", "message": {"role": "user", "content": "go"}},
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "requestId": "req_1",
            "message": {
                "id": "msg_1",
                "model": "claude-sonnet-4-5",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": DEEP}],
                "usage": {"input_tokens": 3, "output_tokens": 5},
            },
        },
    ]
    path = tmp / "claude.jsonl"
    path.write_bytes(b"".join(_dumps(x, depth) + b"\n" for x in lines))
    return path


def _mini(tmp: Path, depth: int) -> Path:
    doc = {
        "trajectory_format": "mini-swe-agent-1",
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "u", "extra": DEEP},
        ],
    }
    path = tmp / "deep.traj.json"
    path.write_bytes(_dumps(doc, depth))
    return path


@pytest.mark.parametrize("depth", [1000, 300])
@pytest.mark.parametrize("make", [_claude, _mini], ids=["claude-code tool_use", "mini-swe-agent"])
def test_deeply_nested_input(tmp_path: Path, make: Callable[[Path, int], Path], depth: int) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    path = make(runs, depth)
    _refused(_import(tmp_path, path), path.name)


def test_shallow_claude_transcript_still_imports(tmp_path: Path) -> None:
    """The limits leave ordinary runs alone: a tool input a few levels deep imports."""
    runs = tmp_path / "runs"
    runs.mkdir()
    env = isolated_env(tmp_path, PATH=os.environ.get("PATH", ""))
    done = subprocess.run(
        [NODWYN, "import", str(_claude(runs, 5))], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "imported" in done.stdout
