"""Storage that refuses: a full disk, a file-size limit, a read-only,
unreadable or non-folder NODWYN_HOME. Each is one line on stderr (exit 14), never a traceback,
and the log stays whole: every event written before is there, no torn line, and the next writer
goes on from it. Sessions are the person's alone: folders 0700, files 0600.

How the disk is made to refuse: a 256 KB tmpfs mounted for the test (needs root; skipped
otherwise), RLIMIT_FSIZE set in the child process (works for anyone), a tmpfs remounted read-only
(root), and for an unreadable folder a 000 folder (when the tests run as root, the child drops the
capabilities that let root ignore file modes)."""

from __future__ import annotations

import ctypes
import os
import resource
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nodwyn.errors import StorageError
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.replay.exact import verify_all
from nodwyn.values.events import Note

pytestmark = pytest.mark.attack("storage")

NODWYN = str(Path(sys.executable).parent / "nodwyn")
BIG = "x" * 20_000  # each reply adds this much to the log
PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2


def _env(tmp_path: Path, home: Path, url: str = "http://127.0.0.1:9") -> dict[str, str]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    config = tmp_path / "config.toml"
    config.write_text(
        "[control]\nmodel = 'chat'\n[models.chat]\napi = 'openai-chat'\nmodel = 'fake-model'\n"
        f"base_url = '{url}'\ncontext_size = 32000\n[network]\nmax_retries = 0\n"
    )
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "NODWYN_HOME": str(home),
        "NODWYN_CONFIG": str(config),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "WS": str(ws),
    }


def _nodwyn(
    env: dict[str, str], *args: str, preexec: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [NODWYN, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=env["WS"],
        preexec_fn=preexec,
    )


def _one_line(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == StorageError.exit_code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("nodwyn: ") and all(w in last for w in words), last


def _whole(home: Path) -> list[int]:
    """Every session under ``home`` reads whole, replays, and a new writer can append to it."""
    store = Store(home)
    counts = []
    for sid in store.ids():
        with store.open(sid) as log:
            assert log.torn_bytes == 0
            seqs = [e.seq for e in log.read()]
            assert seqs == list(range(1, len(seqs) + 1))
            bad = [(v.seq, str(v.error)) for v in verify_all(log) if v.error is not None]
            assert not bad, bad
            counts.append(len(seqs))
    return counts


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); RLIMIT_FSIZE covers the same path")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _calls(n: int) -> list[dict[str, object]]:
    """Replies that each call a tool, so one task makes many requests and log lines."""
    return [
        {"text": f"step {i} " + BIG, "calls": [{"name": "plan-write", "arguments": {"plan": f"step {i}"}}]}
        for i in range(n)
    ]


def test_a_full_disk_is_one_line_and_the_log_stays_whole(tmp_path: Path, tiny_disk: Path) -> None:
    with FakeServer(api="openai-chat", script=_calls(40)) as fake:
        env = _env(tmp_path, tiny_disk / "home", fake.url)
        done = _nodwyn(env, "run", "--yes", "plan a lot")
    _one_line(done, "No space left on device", "free some space")
    counts = _whole(tiny_disk / "home")
    assert counts and counts[0] > 3  # the events written before the disk filled are all there


def _fsize(limit: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_file_size_limit_is_one_line_and_the_log_stays_whole(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FakeServer(api="openai-chat", script=_calls(40)) as fake:
        env = _env(tmp_path, home, fake.url)
        done = _nodwyn(env, "run", "--yes", "plan a lot", preexec=_fsize(150_000))
        _one_line(done, "File too large", "ulimit")
        counts = _whole(home)
        assert counts and counts[0] > 3
        # the next writer, with room again, goes on from the last whole event
        resumed = _nodwyn(env, "resume", "latest", "one more")
    assert "Traceback" not in resumed.stderr
    assert _whole(home)[0] > counts[0]


def test_home_is_a_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_text("not a folder")
    env = _env(tmp_path, home)
    for args in (["run", "hello"], ["sessions"]):
        _one_line(_nodwyn(env, *args), "Not a directory", str(home), "set NODWYN_HOME to a folder")
    assert home.read_text() == "not a folder"


def _without_dac_override() -> None:
    """In the child: root loses the capabilities that let it ignore file modes (after exec), so a
    000 folder refuses it as it refuses anyone else. Nothing to do for another user."""
    if os.getuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
            if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                os._exit(97)


def test_home_is_unreadable(tmp_path: Path) -> None:
    home = tmp_path / "home"
    Store(home).create().close()
    home.chmod(0)
    env = _env(tmp_path, home)
    try:
        for args in (["sessions"], ["replay", "latest"], ["run", "hello"]):
            _one_line(_nodwyn(env, *args, preexec=_without_dac_override), "Permission denied")
    finally:
        home.chmod(0o700)


@pytest.fixture
def read_only_home(tmp_path: Path, tiny_disk: Path) -> Iterator[Path]:
    home = tiny_disk / "home"
    Store(home).create().close()
    done = subprocess.run(["mount", "-o", "remount,ro", str(tiny_disk)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot remount read-only: {done.stderr.strip()}")
    yield home


def test_home_is_read_only(tmp_path: Path, read_only_home: Path) -> None:
    env = _env(tmp_path, read_only_home)
    listing = _nodwyn(env, "sessions")
    assert listing.returncode == 0 and "Traceback" not in listing.stderr  # reading still works
    _one_line(_nodwyn(env, "run", "hello"), "Read-only file system", "writable folder")
    _one_line(_nodwyn(env, "resume", "latest", "hello"), "Read-only file system")


def test_sessions_are_created_0700_and_0600(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        store = Store(tmp_path / "home")
        log = store.create()
        log.append(Note(text="x"))
        digest = log.attachments.put(b"image bytes")
        log.close()
    finally:
        os.umask(old)
    folder = store.sessions / log.id

    def mode(p: Path) -> int:
        return stat.S_IMODE(p.stat().st_mode)

    assert mode(tmp_path / "home") == 0o700 and mode(store.sessions) == 0o700 and mode(folder) == 0o700
    assert mode(folder / "attachments") == 0o700
    files = [folder / "log.jsonl", folder / "index.bin", folder / "lock", folder / "attachments" / digest]
    assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}
