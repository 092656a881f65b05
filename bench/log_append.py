"""Append throughput of the session log, with fsync on (the default policy) and off.

Appends ``--events`` events of about ``--size`` bytes of text to a new session in a temporary
directory (on the disk ``--dir`` names; default the system temp dir) and reports events/s. The
baseline, measured in the same run, is the bare system calls the policy needs per event: one
``write`` of a line of the same size and one ``fdatasync``. Figures are ratios against it.

    .venv/bin/python bench/log_append.py --out docs/bench-log.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from nodwyn.log import Store
from nodwyn.values.events import ToolResult


def _payload(i: int, size: int) -> ToolResult:
    """A tool result of about ``size`` bytes of text, appended as the agent appends one (typed,
    read back through the codec before the write)."""
    words = "the quick brown fox jumps over the lazy dog while the build runs its tests "
    text = (words * (size // len(words) + 1))[:size]
    return ToolResult(call_id=f"call_{i:08d}", name="shell", text=text, error=False)


def bench_append(root: Path, events: int, size: int, fsync: bool, typed: bool = True) -> float:
    """Typed appends (``append``: the payload read back through the codec first), or the same
    data through ``append_raw`` (the envelope checked only): the difference is what the check costs."""
    payloads = [_payload(i, size) for i in range(events)]
    raw = [p.to_data() for p in payloads]
    with Store(root, fsync=fsync).create() as log:
        for p in payloads[:20]:  # warm up
            log.append(p)
        started = time.perf_counter()
        if typed:
            for p in payloads:
                log.append(p)
        else:
            for d in raw:
                log.append_raw(ToolResult.KIND, d)
        return events / (time.perf_counter() - started)


def bench_syscalls(root: Path, events: int, size: int, fsync: bool) -> float:
    line = (
        b'{"seq":1,"t":"2026-11-29T16:07:29.123456Z","kind":"note","ctx":"main","data":'
        + b"x" * size
        + b"}\n"
    )
    fd = os.open(root / f"raw-{fsync}.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        started = time.perf_counter()
        for _ in range(events):
            os.write(fd, line)
            if fsync:
                os.fdatasync(fd)
        return events / (time.perf_counter() - started)
    finally:
        os.close(fd)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=2000, help="events per run with fsync (x10 without)")
    parser.add_argument("--size", type=int, default=500, help="bytes of text per event")
    parser.add_argument("--runs", type=int, default=5, help="runs of each case; the median is reported")
    parser.add_argument("--dir", type=Path, default=None, help="where to make the temporary directory")
    parser.add_argument("--out", type=Path, default=None, help="append the table to this markdown file")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(dir=args.dir, prefix="nodwyn-bench-") as tmp:
        root = Path(tmp)
        cases: list[tuple[str, Callable[[], float]]] = [
            ("bare write + fdatasync (baseline)", lambda: bench_syscalls(root, args.events, args.size, True)),
            ("append, fsync on (default)", lambda: bench_append(root, args.events, args.size, True)),
            ("bare write, no fdatasync", lambda: bench_syscalls(root, args.events * 10, args.size, False)),
            ("append, fsync off", lambda: bench_append(root, args.events * 10, args.size, False)),
            (
                "append_raw (no payload check), fsync off",
                lambda: bench_append(root, args.events * 10, args.size, False, typed=False),
            ),
        ]
        samples: dict[str, list[float]] = {name: [] for name, _ in cases}
        for _ in range(args.runs):  # interleaved, so a burst of load hits every case alike
            for name, run in cases:
                samples[name].append(run())
        rows = [(name, statistics.median(samples[name])) for name, _ in cases]
    base = rows[0][1]
    on = rows[1][1]
    lines = [
        f"Append throughput, {args.size}-byte text events, median of {args.runs} runs "
        f"(`.venv/bin/python bench/log_append.py --events {args.events} --size {args.size}`):",
        "",
        "| case | events/s | vs baseline | vs append with fsync |",
        "|---|---:|---:|---:|",
    ]
    for name, rate in rows:
        lines.append(f"| {name} | {rate:,.0f} | {rate / base:.2f}x | {rate / on:.2f}x |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        with args.out.open("a") as fh:
            fh.write(table + "\n\n")


if __name__ == "__main__":
    main()
