"""A second writer let in by replacing the session's lock file (issue 21, item 7).

While writer 1 holds a session (as `nodwyn run` does while it waits on its provider), something
replaces `<session>/lock` by rename (fs-write, a sync tool), removes it, or renames a copy of the
log over `log.jsonl`. The second writer is refused (`LockedError`, exit 4 from the CLI), and
nothing either writer does leaves seqs out of order: the log still reads and replays whole.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from nodwyn.errors import CorruptLogError, LockedError
from nodwyn.log import SessionLog, Store
from nodwyn.replay.exact import verify_all
from nodwyn.testing import SessionBuilder, recipe
from nodwyn.values.events import UserMsg

pytestmark = pytest.mark.attack("log integrity")

NODWYN = str(Path(sys.executable).parent / "nodwyn")


def _writer(store: Store, workspace: str = "/work/space") -> tuple[SessionBuilder, SessionLog]:
    """Writer 1: a session with a few events, still open for writing."""
    b = SessionBuilder(recipe(), store=store, model="chat", workspace=workspace)
    b.user("hello")
    log = b.log
    assert isinstance(log, SessionLog)
    return b, log


def _replace_by_rename(path: Path) -> None:
    tmp = path.with_name(path.name + ".new")
    tmp.write_bytes(b"")
    os.replace(tmp, path)


def _remove(path: Path) -> None:
    path.unlink()


def _swap_for_copy(path: Path) -> None:
    tmp = path.with_name(path.name + ".copy")
    shutil.copyfile(path, tmp)
    os.replace(tmp, path)


@pytest.mark.parametrize(
    "change", [_replace_by_rename, _remove, _swap_for_copy], ids=["renamed", "removed", "copied"]
)
def test_lock_file_replaced_admits_no_second_writer(tmp_path: Path, change: Callable[[Path], None]) -> None:
    store = Store(tmp_path, fsync=False)
    b, log = _writer(store)
    change(log.path / "lock")
    with pytest.raises(LockedError, match="lock file"):
        store.open(log.id, write=True)
    last = b.user("still the one writer").seq  # writer 1 goes on, seqs in order
    b.close()
    with store.open(log.id) as again:
        assert [e.seq for e in again.read()] == list(range(1, last + 1))
        verify_all(again)


def test_second_writer_refused_again_and_again(tmp_path: Path) -> None:
    """Every later attempt is refused too, each after its own replacement of the lock file."""
    store = Store(tmp_path, fsync=False)
    b, log = _writer(store)
    for _ in range(3):
        _replace_by_rename(log.path / "lock")
        with pytest.raises(LockedError):
            store.open(log.id, write=True)
        b.user("turn")
    b.close()
    with store.open(log.id) as again:
        seqs = [e.seq for e in again.read()]
    assert seqs == sorted(seqs) == list(range(1, len(seqs) + 1))


def test_log_replaced_under_the_writer_stops_its_appends(tmp_path: Path) -> None:
    """A copy renamed over log.jsonl: the writer's next append would go to an unlinked file no
    reader sees; it is refused in one line and the file there now is left as it was."""
    store = Store(tmp_path, fsync=False)
    b, log = _writer(store)
    target = log.path / "log.jsonl"
    _swap_for_copy(target)
    before = target.read_bytes()
    with pytest.raises(CorruptLogError, match="replaced or removed while this writer held it"):
        log.append(UserMsg(text="lost"))
    assert target.read_bytes() == before
    b.close()
    with store.open(log.id, write=True) as resumed:  # a new writer goes on from the file there now
        resumed.append(UserMsg(text="after"))
    with store.open(log.id) as again:
        assert [e.seq for e in again.read()] == [1, 2, 3]


def test_cli_resume_refused_while_writer_holds(tmp_path: Path, person: Callable[..., dict[str, str]]) -> None:
    """The issue's run: writer 1 holds the session, the lock file is replaced by rename, and a
    second `nodwyn resume` is refused with exit 4, one line, and nothing appended."""
    env = {**person(tmp_path, "http://127.0.0.1:9"), "PATH": os.environ.get("PATH", "")}
    store = Store(Path(env["NODWYN_HOME"]), fsync=False)
    b, log = _writer(store, str(tmp_path / "ws"))
    _replace_by_rename(log.path / "lock")
    size = (log.path / "log.jsonl").stat().st_size
    done = subprocess.run(
        [NODWYN, "resume", log.id, "go on", "--yes"],
        env=env,
        cwd=tmp_path / "ws",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 4, done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert (log.path / "log.jsonl").stat().st_size == size
    b.close()
