"""How `nodwyn import` scales: import n, 2n and 4n runs of a workload folder into a fresh store and
print runs per second and each time as a ratio of the n-run time (linear cost: 2.0 and 4.0), for
three ways of writing, measured in the same run:

- ``per-event``: every event fsync'ed as it is appended (how `nodwyn import` wrote before ADR
  0295; the baseline);
- ``staged``: written without fsync in a staging store, flushed once and renamed into place (how
  `nodwyn import` writes);
- ``no-fsync``: nothing flushed at all (the floor: the loaders, the log's encoding and redaction).

The last column is each time against the baseline's for the same runs. The runs are taken
round-robin over the folder's sources (each sample has the same mix). Usage:
    .venv/bin/python bench/import_scale.py ../shared/workloads --n 5
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from nodwyn.imports import Found, find, load, source_of, write
from nodwyn.log import Store


class PerEventStore(Store):
    """The write before ADR 0295: the session's staging store fsyncs every append."""

    def staging(self, clock: Callable[[], datetime] | None = None) -> Store:
        staged = super().staging(clock)
        return Store(staged.root, fsync=True, clock=clock, known=staged.known)


MODES: dict[str, Callable[[Path], Store]] = {
    "per-event": lambda root: PerEventStore(root),
    "staged": lambda root: Store(root),
    "no-fsync": lambda root: Store(root, fsync=False),
}


def round_robin(folder: Path) -> list[Found]:
    by_source: defaultdict[str, list[Found]] = defaultdict(list)
    for f in find(folder):
        by_source[f.name.split("/", 1)[0]].append(f)
    out: list[Found] = []
    queues = [list(v) for _, v in sorted(by_source.items())]
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out


def timed(runs: list[Found], mode: str) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        store = MODES[mode](Path(tmp))
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
    ap.add_argument("--n", type=int, default=5, help="the smallest sample (then 2n and 4n runs)")
    args = ap.parse_args(argv)
    runs = round_robin(args.folder)
    if len(runs) < 4 * args.n:
        print(f"import_scale: {len(runs)} runs, fewer than 4n = {4 * args.n}", file=sys.stderr)
        return 2
    print(
        f"{'store':<10} {'runs':>5} {'events':>8} {'seconds':>8} {'runs/s':>7} {'events/s':>9} "
        f"{'time / time(n)':>15} {'time / per-event':>17}"
    )
    baseline: dict[int, float] = {}
    for mode in MODES:
        first = None
        for k in (1, 2, 4):
            sample = runs[: k * args.n]
            seconds, events = timed(sample, mode)
            first = first or seconds
            base = baseline.setdefault(k, seconds)
            print(
                f"{mode:<10} {len(sample):>5} {events:>8} {seconds:>8.2f} {len(sample) / seconds:>7.2f} "
                f"{events / seconds:>9.0f} {seconds / first:>15.2f} {seconds / base:>17.3f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
