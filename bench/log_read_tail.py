"""The cost of reading the last 100 events of a 10 MB, 100 MB and 1 GB session log.

Writes each log into a temporary directory (on the disk ``--dir`` names) with the log's own line
encoder and index format, events of mixed sizes like an agent's (messages, requests, replies, tool
results up to 64 KB), then times opening the session read-only and reading its last 100 events,
``--repeat`` times, the log's pages warm in the page cache. The baseline is the 10 MB log in the
same run; the figures are ratios against it, so the claim is that they stay near 1. For contrast it
also times one scan from the start to the same events (what reading without an index costs) and
one rebuild of the index from the log (what a lost index costs, once).

    .venv/bin/python bench/log_read_tail.py --out docs/bench-log.md
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from collections import deque
from datetime import UTC, datetime
from pathlib import Path

from nodwyn.log import Store
from nodwyn.log.ids import new_session_id
from nodwyn.log.index import INDEX_NAME, IndexFile
from nodwyn.log.jsonl import encode_line, parse_line
from nodwyn.log.session_log import LOG_NAME, format_time

MB = 1 << 20
KINDS = [
    ("llm.req", 300),
    ("llm.resp", 2000),
    ("tool.result", 8000),
    ("tool.result", 64000),
    ("user.msg", 500),
]


def write_log(root: Path, target: int, seed: int) -> str:
    """A session of about ``target`` bytes, written as the log writes it (lines + index entries).

    The last 100 events are the same in every log (same kinds, sizes and text), so a tail read
    does the same work whatever the log's size.
    """
    sid = new_session_id(datetime(2026, 11, 29, tzinfo=UTC), token=f"{seed:08x}")
    folder = root / "sessions" / sid
    folder.mkdir(parents=True)
    text = "".join(random.Random(0).choice("abcdefghijklmnopqrstuvwxyz     \n{}()=.,") for _ in range(70000))
    t = format_time(datetime(2026, 11, 29, 12, tzinfo=UTC))
    tail_rng = random.Random(0)
    tail = [tail_rng.choice(KINDS) + (tail_rng.randrange(0, 1000),) for _ in range(100)]
    tail_bytes = sum(n for _, n, _ in tail) + 100 * 120
    ends: list[int] = []
    size, seq = 0, 0
    rng = random.Random(seed)

    def event(kind: str, n: int, start: int) -> bytes:
        nonlocal seq, size
        seq += 1
        line = encode_line(seq, t, kind, "main", {"text": text[start : start + n], "n": seq % 1000})
        size += len(line)
        ends.append(size)
        return line

    with open(folder / LOG_NAME, "wb", buffering=8 * MB) as fh:
        while size < target - tail_bytes:
            kind, n = rng.choice(KINDS)
            fh.write(event(kind, n, rng.randrange(0, len(text) - n)))
        for kind, n, start in tail:
            fh.write(event(kind, n, start))
    IndexFile.write_new(folder / INDEX_NAME, ends).close()
    return sid


def time_tail(store: Store, sid: str, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        with store.open(sid) as log:
            events = list(log.read(log.last_seq - 99))
        times.append(time.perf_counter() - started)
        assert len(events) == 100
    return times


def time_scan(store: Store, sid: str) -> float:
    """Without an index: read every line from the start, parse the last 100."""
    started = time.perf_counter()
    path = store.sessions / sid / LOG_NAME
    with open(path, "rb") as fh:
        lines = deque(fh, maxlen=100)
    tail = [parse_line(line, session=sid, offset=0) for line in lines]
    assert len(tail) == 100
    return time.perf_counter() - started


def time_rebuild(store: Store, sid: str) -> float:
    (store.sessions / sid / INDEX_NAME).unlink()
    started = time.perf_counter()
    with store.open(sid, write=True) as log:
        assert log.last_seq > 0
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10,100,1000", help="log sizes in MB, the first is the baseline")
    parser.add_argument("--repeat", type=int, default=200, help="timed tail reads per log")
    parser.add_argument("--dir", type=Path, default=None, help="where to make the temporary directory")
    parser.add_argument("--out", type=Path, default=None, help="append the table to this markdown file")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="nodwyn-bench-") as tmp:
        store = Store(Path(tmp), fsync=False)
        sids = {}
        for i, mb in enumerate(sizes):
            started = time.perf_counter()
            sids[mb] = write_log(Path(tmp), mb * MB, seed=i + 1)
            print(f"wrote {mb} MB log in {time.perf_counter() - started:.1f} s", flush=True)
        for mb in sizes:
            time_tail(store, sids[mb], 20)  # warm the page cache and the code
        # interleave the sizes so a burst of load on the machine hits them all alike
        samples: dict[int, list[float]] = {mb: [] for mb in sizes}
        for _ in range(args.repeat // 10):
            for mb in sizes:
                samples[mb].extend(time_tail(store, sids[mb], 10))
        for mb in sizes:
            with store.open(sids[mb]) as log:
                events, size = log.last_seq, os.path.getsize(store.sessions / sids[mb] / LOG_NAME)
            scan = time_scan(store, sids[mb])
            rebuild = time_rebuild(store, sids[mb])
            rows.append((mb, events, size, statistics.median(samples[mb]), _p90(samples[mb]), scan, rebuild))
    base = rows[0][3]
    lines = [
        f"Open read-only + read the last 100 events, median of {args.repeat} runs, page cache warm "
        f"(`.venv/bin/python bench/log_read_tail.py --sizes {args.sizes} --repeat {args.repeat}`):",
        "",
        "| log | events | tail read (median) | p90 | vs 10 MB | scan from start (no index) | index rebuild |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for _mb, events, size, median, p90, scan, rebuild in rows:
        lines.append(
            f"| {size / MB:,.0f} MB | {events:,} | {median * 1e3:.2f} ms | {p90 * 1e3:.2f} ms | "
            f"{median / base:.2f}x | {scan * 1e3:,.0f} ms | {rebuild * 1e3:,.0f} ms |"
        )
    table = "\n".join(lines)
    print(table)
    if args.out:
        with args.out.open("a") as fh:
            fh.write(table + "\n\n")


def _p90(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.9)]


if __name__ == "__main__":
    main()
