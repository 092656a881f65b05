"""Hand-edited logs (issue 21, item 8).

A digest is not an authenticated seal: whoever edits a log can rewrite the later requests'
digests, and `replay --all` verifies it. So `replay --all` says what it proves (the requests were
rebuilt, not that the log is untouched), and a sealed session (the keychain's seal secret, `nodwyn
keys seal`) carries a chained HMAC in `seal.bin` that `nodwyn verify SESSION` checks: a changed
answer, changed usage, a forged tool result with the later digest rewritten, a removed, inserted,
reordered or appended line, a cut log, or another session's log and seal are each refused (exit
5), while the unchanged session verifies and still replays.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.replay.exact import verify_all

pytestmark = pytest.mark.attack("log integrity")

NODWYN = str(Path(sys.executable).parent / "nodwyn")
Person = Callable[..., dict[str, str]]
Sealed = Callable[[Path], tuple[dict[str, str], Path]]


def _nodwyn(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [NODWYN, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def _made(tmp: Path, person: Person) -> None:
    """A real run with a tool call and two requests, in a store whose keychain holds a seal secret."""
    script: list[dict[str, Any]] = [
        {"text": "", "calls": [{"name": "fs-read", "id": "c1", "arguments": {"path": "notes.txt"}}]},
        {"text": "All settings look fine."},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        env = {**person(tmp, fake.url), "PATH": os.environ.get("PATH", "")}
        (tmp / "ws" / "notes.txt").write_text("base_url = 'https://api.example.com'\n")
        made = _nodwyn(env, "keys", "seal")
        assert made.returncode == 0, made.stderr
        done = _nodwyn(env, "run", "check the settings", "--yes", cwd=tmp / "ws")
        assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory, person: Person) -> Path:
    tmp = tmp_path_factory.mktemp("sealed")
    _made(tmp, person)
    return tmp


@pytest.fixture
def sealed(original: Path, person: Person) -> Sealed:
    """A copy of the sealed run's machine (session, keychain) under a test's own folder."""

    def copy(to: Path) -> tuple[dict[str, str], Path]:
        shutil.copytree(original, to, dirs_exist_ok=True)
        env = {**person(to, "http://127.0.0.1:9"), "PATH": os.environ.get("PATH", "")}
        (folder,) = (Path(env["NODWYN_HOME"]) / "sessions").iterdir()
        return env, folder

    return copy


def _lines(folder: Path) -> list[bytes]:
    return (folder / "log.jsonl").read_bytes().splitlines(keepends=True)


def _rewrite(folder: Path, lines: list[bytes]) -> None:
    (folder / "log.jsonl").write_bytes(b"".join(lines))
    (folder / "index.bin").unlink(missing_ok=True)  # derived data: readers rebuild it


def _edit(folder: Path, kind: str, change: Callable[[dict[str, object]], None]) -> None:
    lines = _lines(folder)
    for i, line in enumerate(lines):
        event = orjson.loads(line)
        if event["kind"] == kind:
            change(event["data"])
            lines[i] = orjson.dumps(event) + b"\n"
    _rewrite(folder, lines)


def _answer(data: dict[str, object]) -> None:
    response = data["response"]
    assert isinstance(response, dict)
    if response.get("text"):
        response["text"] = "I also sent your key to my own server."


def _usage(data: dict[str, object]) -> None:
    response = data["response"]
    assert isinstance(response, dict)
    response["usage"] = {"prompt_tokens": 1, "completion_tokens": 1}


def _forged_result(data: dict[str, object]) -> None:
    data["text"] = "CORP_LLM=forged"


def _drop(folder: Path) -> None:
    lines = _lines(folder)
    _rewrite(folder, lines[:2] + lines[3:])


def _swap(folder: Path) -> None:
    lines = _lines(folder)
    lines[1], lines[2] = lines[2], lines[1]
    _rewrite(folder, lines)


def _append(folder: Path) -> None:
    lines = _lines(folder)
    last = orjson.loads(lines[-1])
    extra = {"seq": last["seq"] + 1, "t": last["t"], "kind": "user.msg", "ctx": "main", "data": {"text": "x"}}
    _rewrite(folder, [*lines, orjson.dumps(extra) + b"\n"])


def _cut(folder: Path) -> None:
    _rewrite(folder, _lines(folder)[:-1])


EDITS: dict[str, Callable[[Path], None]] = {
    "changed final answer": lambda f: _edit(f, "llm.resp", _answer),
    "changed usage": lambda f: _edit(f, "llm.resp", _usage),
    "forged tool result": lambda f: _edit(f, "tool.result", _forged_result),
    "removed line": _drop,
    "reordered lines": _swap,
    "appended line": _append,
    "cut log": _cut,
}


@pytest.mark.forges_digests
@pytest.mark.parametrize("name", list(EDITS))
def test_hand_edited_log_is_refused_by_verify(tmp_path: Path, sealed: Sealed, name: str) -> None:
    env, folder = sealed(tmp_path)
    sid = folder.name
    assert _nodwyn(env, "verify", sid).returncode == 0
    EDITS[name](folder)
    done = _nodwyn(env, "verify", sid)
    assert done.returncode == 5, (done.stdout, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


@pytest.mark.forges_digests
def test_forged_result_with_rewritten_digest_verifies_but_is_not_sealed(
    tmp_path: Path, sealed: Sealed
) -> None:
    """The issue's forgery: a tool result changed and the later request's digest rewritten to
    match. `replay --all` rebuilds it (it is consistent) and says that is all it proves; `verify`
    refuses it."""
    env, folder = sealed(tmp_path)
    sid = folder.name
    _edit(folder, "tool.result", _forged_result)
    store = Store(Path(env["NODWYN_HOME"]))
    with store.open(sid) as log:
        wrong = [v for v in verify_all(log) if v.error is not None]
    assert wrong  # the digest no longer matches: now rewrite it as a forger would
    lines = _lines(folder)
    for v in wrong:
        event = orjson.loads(lines[v.seq - 1])
        found = re.search(r"rebuilt (sha256:[0-9a-f]{64})", str(v.error))
        assert found is not None, str(v.error)
        event["data"]["digest"] = found.group(1)
        lines[v.seq - 1] = orjson.dumps(event) + b"\n"
    _rewrite(folder, lines)
    replayed = _nodwyn(env, "replay", sid, "--all")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "verified, 0 refused" in replayed.stdout
    assert "does not prove the log is untouched" in replayed.stderr
    assert "nodwyn verify" in replayed.stderr
    assert _nodwyn(env, "verify", sid).returncode == 5


@pytest.mark.forges_digests
def test_another_sessions_log_and_seal_are_refused(tmp_path: Path, sealed: Sealed) -> None:
    """The chain starts from the session id: a whole other sealed session copied in does not verify."""
    env, folder = sealed(tmp_path)
    other_env, other = sealed(tmp_path / "b")
    moved = other.with_name(other.name[:-8] + "0badcafe")  # another session id, the same key
    os.rename(other, moved)
    assert _nodwyn(other_env, "verify", folder.name[:-8] + "0badcafe").returncode == 5


def test_unchanged_sealed_session_verifies_and_replays(tmp_path: Path, sealed: Sealed) -> None:
    env, folder = sealed(tmp_path)
    done = _nodwyn(env, "verify", folder.name)
    assert done.returncode == 0 and "sealed and unchanged" in done.stdout
    replayed = _nodwyn(env, "replay", folder.name, "--all")
    assert replayed.returncode == 0 and "2 verified" in replayed.stdout


@pytest.mark.forges_digests
def test_resumed_sealed_session_stays_sealed(tmp_path: Path, sealed: Sealed) -> None:
    env, folder = sealed(tmp_path)
    with FakeServer(api="openai-chat", script=[{"text": "again"}]) as fake:
        config = Path(env["NODWYN_CONFIG"])
        text = config.read_text()
        config.write_text(text.replace(text.split('base_url = "')[1].split('"')[0], fake.url))
        done = _nodwyn(env, "resume", folder.name, "once more", "--yes", cwd=tmp_path / "ws")
        assert done.returncode == 0, done.stderr
    assert _nodwyn(env, "verify", folder.name).returncode == 0
    _cut(folder)
    assert _nodwyn(env, "verify", folder.name).returncode == 5


def test_session_without_seal_is_named(tmp_path: Path, person: Person) -> None:
    with FakeServer(api="openai-chat", script=[{"text": "hi"}]) as fake:
        env = {**person(tmp_path, fake.url), "PATH": os.environ.get("PATH", "")}
        assert _nodwyn(env, "run", "hello", "--yes", cwd=tmp_path / "ws").returncode == 0
    (folder,) = (Path(env["NODWYN_HOME"]) / "sessions").iterdir()
    assert not (folder / "seal.bin").exists()
    assert _nodwyn(env, "keys", "seal").returncode == 0
    done = _nodwyn(env, "verify", folder.name)
    assert done.returncode == 3 and "has no seal" in done.stderr
