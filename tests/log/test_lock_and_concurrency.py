"""One writer per session, enforced across processes; readers see only whole events while it writes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from nodwyn.errors import LockedError
from nodwyn.log import Store

HOLD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from nodwyn.log import Store
    log = Store(Path(sys.argv[1])).open(sys.argv[2], write=True)
    print("holding", flush=True)
    sys.stdin.read()  # hold the lock until the test closes our stdin
    log.close()
    """
)


def _holder(root: Path, sid: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(root), sid], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "holding\n"
    return proc


def test_second_writer_in_another_process_is_refused_naming_session_and_pid(tmp_path: Path) -> None:
    store = Store(tmp_path)
    with store.create() as log:
        log.append_raw("note", {"text": "one"})
        sid = log.id
    with _holder(tmp_path, sid) as proc:  # its exit closes the holder's stdin (it lets go) and waits
        with pytest.raises(LockedError) as err:
            store.open(sid, write=True)
        message = str(err.value)
        assert sid in message
        assert f"locked by pid {proc.pid}" in message
        assert "\n" not in message
        with store.open(sid) as reader:  # readers take no lock
            assert reader.last_seq == 1
    with store.open(sid, write=True) as writer:  # released on close: the next writer gets it
        assert writer.stale_lock_pid is None
        assert writer.append_raw("note", {"text": "two"}).seq == 2


def test_second_writer_in_the_same_process_is_refused(tmp_path: Path) -> None:
    store = Store(tmp_path)
    with store.create() as log:
        with pytest.raises(
            LockedError, match=rf"session {log.id} .*already open for writing in this process"
        ):
            store.open(log.id, write=True)
        log.append_raw("note", {"text": "still mine"})


def test_lock_of_a_killed_writer_is_taken_over_and_named(tmp_path: Path) -> None:
    store = Store(tmp_path)
    with store.create() as log:
        sid = log.id
    with _holder(tmp_path, sid) as proc:
        with pytest.raises(LockedError, match=str(proc.pid)):
            store.open(sid, write=True)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    assert (store.sessions / sid / "lock").read_text().strip() == str(proc.pid)  # left behind
    with store.open(sid, write=True) as writer:
        assert writer.stale_lock_pid == proc.pid
        assert (store.sessions / sid / "lock").read_text().strip() == str(os.getpid())


WRITER = textwrap.dedent(
    """
    import random, sys
    from pathlib import Path
    from nodwyn.log import Store
    rng = random.Random(int(sys.argv[3]))
    with Store(Path(sys.argv[1]), fsync=False).open(sys.argv[2], write=True) as log:
        for i in range(int(sys.argv[4])):
            size = rng.choice([10, 100, 1000, 30000, 300000])
            log.append_raw("note", {"i": i, "size": size, "pad": "z" * size})
    """
)


def test_two_readers_see_only_whole_events_while_one_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = Store(tmp_path, fsync=False)
    with store.create() as log:
        sid = log.id
    total = 1500
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), sid, "11", str(total)])
    stats = {"reads": 0, "events": 0, "partial_tail_seen": 0}
    failures: list[BaseException] = []
    lock = threading.Lock()

    def reader() -> None:
        try:
            with store.open(sid) as log:
                seen = 0
                while True:
                    done = writer.poll() is not None
                    events = list(log.read(max(1, seen - 5)))
                    count = log.last_seq
                    torn = log.torn_bytes
                    for e in events:
                        assert e.data["pad"] == "z" * e.data["size"]
                    seqs = [e.seq for e in events]
                    assert seqs == list(range(max(1, seen - 5), max(1, seen - 5) + len(seqs)))
                    assert len(seqs) == 0 or seqs[-1] <= count
                    seen = seqs[-1] if seqs else seen
                    with lock:
                        stats["reads"] += 1
                        stats["events"] += len(events)
                        stats["partial_tail_seen"] += torn > 0
                    if done and seen == count:
                        return
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert writer.wait(timeout=120) == 0
    if failures:
        raise failures[0]
    with store.open(sid) as log:
        final = list(log.read())
        assert [e.data["i"] for e in final] == list(range(total))
        assert log.torn_bytes == 0
    with capsys.disabled():  # the figure belongs in the test output
        print(
            f"\nconcurrent read: {stats['reads']} reads by 2 readers, "
            f"{stats['events']} events checked whole, "
            f"a partial last line seen (and not parsed) {stats['partial_tail_seen']} times"
        )
    assert stats["reads"] > 10


FULL = textwrap.dedent(
    """
    import os, resource, signal, sys
    from pathlib import Path
    from nodwyn.errors import StorageError
    from nodwyn.log import Store
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
    log = Store(Path(sys.argv[1])).open(sys.argv[2], write=True)
    limit = os.path.getsize(log.path / "log.jsonl") + 5000
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        for i in range(1000):
            print(log.append_raw("note", {"i": i, "pad": "q" * 700}).seq, flush=True)
    except StorageError as exc:  # one line naming the seq not written (ADR 0142)
        print("error", "File too large" in str(exc) and "nothing of it was written" in str(exc), flush=True)
    """
)


def test_a_write_that_fails_part_way_leaves_no_partial_line(tmp_path: Path) -> None:
    """The file size limit (RLIMIT_FSIZE) makes a write stop part way, as a full disk does."""
    store = Store(tmp_path)
    with store.create() as log:
        log.append_raw("note", {"text": "first"})
        sid = log.id
    proc = subprocess.run(
        [sys.executable, "-c", FULL, str(tmp_path), sid], capture_output=True, text=True, timeout=60
    )
    lines = proc.stdout.split()
    assert lines[-2:] == ["error", "True"], proc.stdout + proc.stderr
    acked = [int(x) for x in lines[:-2]]
    assert acked == list(range(2, 2 + len(acked))) and len(acked) >= 3
    with store.open(sid) as reader:
        assert reader.torn_bytes == 0
        assert reader.last_seq == acked[-1]
        assert [e.data["i"] for e in reader.read(2)] == list(range(len(acked)))
