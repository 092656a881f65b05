"""How `nodwyn import` scales: import n, 2n and 4n runs of a workload folder into a fresh store and
print runs per second and each time as a ratio of the n-run time (linear cost: 2.0 and 4.0).

The runs are taken round-robin over the folder's sources (each sample has the same mix), each
read by its loader and written as an imported session, as `nodwyn import` does (the store's
fsync as configured by default). Usage:
    .venv/bin/python bench/import_scale.py ../shared/workloads --n 6
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from nodwyn.imports import find, load, source_of, write
from nodwyn.log import Store


def round_robin(folder: Path) -> list:  # type: ignore[type-arg]
    by_source = defaultdict(list)
    for f in find(folder):
        by_source[f.name.split("/", 1)[0]].append(f)
    out = []
    queues = [list(v) for _, v in sorted(by_source.items())]
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out


def timed(runs: list, fsync: bool) -> tuple[float, int]:  # type: ignore[type-arg]
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp), fsync=fsync)
        events = 0
        started = time.perf_counter()
        for f in runs:
            run = load(f)
            sid = write(store, run, source_of(f, run))
            with store.open(sid) as log:
                events += log.last_seq
        return time.perf_counter() - started, events


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--n", type=int, default=6, help="the smallest sample (then 2n and 4n runs)")
    ap.add_argument("--no-fsync", action="store_true", help="write without fsync (the disk's share)")
    args = ap.parse_args(argv)
    runs = round_robin(args.folder)
    if len(runs) < 4 * args.n:
        print(f"import_scale: {len(runs)} runs, fewer than 4n = {4 * args.n}", file=sys.stderr)
        return 2
    base = None
    print(f"{'runs':>5} {'events':>8} {'seconds':>8} {'runs/s':>7} {'events/s':>9} {'time / time(n)':>15}")
    for k in (1, 2, 4):
        sample = runs[: k * args.n]
        seconds, events = timed(sample, not args.no_fsync)
        base = base or seconds
        print(
            f"{len(sample):>5} {events:>8} {seconds:>8.2f} {len(sample) / seconds:>7.2f} "
            f"{events / seconds:>9.0f} {seconds / base:>15.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
