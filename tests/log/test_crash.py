"""Crash test: a writer process is killed with SIGKILL at random moments, 200 times.

Each round forks a child that opens the session for writing (cutting any torn tail, as a real
restart does) and appends events as fast as it can, writing each seq to a pipe only after
``append`` returned: that is the acknowledgement. The parent kills it after a random delay, then
checks the log: it opens, seqs run 1..N with no gap, every acknowledged event is there with its
exact data, and what is not acknowledged is at most the event in flight (plus the ``log.repaired``
of the child's open, which is written before the first acknowledgement).

The children are forked by a small server process (``tests/log/crash_writer.py``), not by the
test process, whose size made each fork and kill cost a quarter of a second (ADR 0471).
"""

from __future__ import annotations

import os
import random
import select
import signal
import time
from pathlib import Path

import pytest
from tests.log.crash_writer import Forks

from nodwyn.log import Store
from nodwyn.values.events import Event

ROUNDS = 200


def _check(acked: dict[int, tuple[int, int, int]], events: list[Event]) -> None:
    """Every acknowledged event among ``events`` holds exactly what its writer appended."""
    for event in events:
        if event.seq in acked:
            pid, i, size = acked[event.seq]
            assert event.data == {"pid": pid, "i": i, "pad": "p" * size}, (
                f"acknowledged seq {event.seq} changed"
            )


def _wait_open(rfd: int) -> bytes:
    """What the child wrote up to its ``open`` line (it has opened the session for writing)."""
    out = b""
    deadline = time.monotonic() + 30
    while b"open" not in out and time.monotonic() < deadline:
        ready, _, _ = select.select([rfd], [], [], 1)
        if ready:
            chunk = os.read(rfd, 65536)
            if not chunk:
                break
            out += chunk
    return out


def _drain(rfd: int) -> bytes:
    out = b""
    while True:
        ready, _, _ = select.select([rfd], [], [], 0)
        if not ready:
            return out
        chunk = os.read(rfd, 65536)
        if not chunk:
            return out
        out += chunk


@pytest.mark.slow
def test_sigkilled_writer_loses_no_acknowledged_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(20261129)
    store = Store(tmp_path)
    with store.create() as log:
        sid = log.id
    acked: dict[int, tuple[int, int, int]] = {}  # seq -> (pid, i, pad size)
    figures = {"acked": 0, "unacked_tail": 0, "killed_before_open": 0, "kills": 0}
    verified = 0  # seqs checked by earlier rounds
    started = time.monotonic()
    forks = Forks()
    for _ in range(ROUNDS):
        rfd, wfd = os.pipe()
        pid = forks.start(tmp_path, sid, wfd, rng.randrange(1 << 30))
        os.close(wfd)
        received = b""
        if rng.random() < 0.85:  # most kills land among appends; the rest anywhere, opening included
            received = _wait_open(rfd)
        time.sleep(rng.uniform(0, 0.04))
        os.kill(pid, signal.SIGKILL)
        status = forks.status()
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        figures["kills"] += 1
        # each line is one write() to a pipe, so whole; drop anything after the last newline anyway
        complete = [ln.split() for ln in (received + _drain(rfd)).decode().split("\n")[:-1]]
        os.close(rfd)
        if not any(parts[0] == "open" for parts in complete):
            figures["killed_before_open"] += 1
        for parts in complete:
            if parts[0] == "ack":
                seq, i, size = int(parts[1]), int(parts[2]), int(parts[3])
                assert seq not in acked, f"seq {seq} acknowledged twice: an earlier event was lost"
                acked[seq] = (pid, i, size)
                figures["acked"] += 1

        with store.open(sid) as log:
            # this round's events (earlier rounds were checked, and all are again at the end)
            first = max(1, verified - 1)
            events = list(log.read(first))  # raises on a gap, a bad line or a wrong seq
            assert [e.seq for e in events] == list(range(first, first + len(events)))
            assert first + len(events) - 1 >= max(acked, default=0)
            _check(acked, events)
            tail = [e for e in events if e.seq > max(max(acked, default=0), verified)]
            notes = [e for e in tail if e.kind == "note"]
            repairs = [e for e in tail if e.kind == "log.repaired"]
            assert len(notes) <= 1 and len(notes) + len(repairs) == len(tail), [e.kind for e in tail]
            figures["unacked_tail"] += len(notes)
            verified = log.last_seq
    forks.close()
    with store.open(sid, write=True) as log:  # and a writer can still open it
        total = log.last_seq
        everything = list(log.read())
        assert [e.seq for e in everything] == list(range(1, total + 1))
        _check(acked, everything)
        repaired = sum(e.kind == "log.repaired" for e in everything)
    elapsed = time.monotonic() - started
    with capsys.disabled():  # the figure belongs in the test output
        print(
            f"\ncrash test: {figures['kills']} SIGKILLs in {elapsed:.1f} s; {figures['acked']} acknowledged "
            f"events, 0 lost; {figures['unacked_tail']} unacknowledged events found written after a kill; "
            f"{figures['killed_before_open']} kills before the writer had opened; {repaired} torn tails cut "
            f"(log.repaired); log ends at seq {total}"
        )
    assert figures["acked"] > 0 and figures["kills"] - figures["killed_before_open"] >= ROUNDS // 2
