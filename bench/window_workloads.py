"""Replay real agent runs through nodwyn's window and a sliding window, at several budgets.

    .venv/bin/python bench/window_workloads.py ../shared/workloads [--budgets 16,32,64]

For each run (mini-swe-agent v1/v2, SWE-agent, OpenHands; see bench/workloads/), request k is
built from the conversation before the model's k-th reply, by nodwyn's window (``engine``) and by
a window that drops the oldest messages to fit (``sliding``); ``whole`` sends every request whole
(no window: the minimum's policy, for reference). Per budget (Ki tokens; a token is
three bytes of the canonical request) it prints: the share of prompt bytes a single-slot prefix
cache serves, uncached bytes as a multiple of the append-only minimum, full prefills, requests over
the budget, mean occupancy and the share of the conversation still visible. Definitions:
docs/bench-workloads.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench.workloads` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.workloads import Found, WorkloadError, engine, find, load, sliding
from bench.workloads.measure import Figures, Measured, figures
from bench.workloads.prepared import prepare

KI = 1024
POLICIES = ("engine", "sliding", "whole")
TARGET_BUDGET = 32 * KI
TARGETS = {"cached_share": 0.95, "uncached_ratio": 1.3, "over_budget": 0, "visible": 0.65}

# (source, policy, budget) -> [(requests, minimum)] for each run
Results = dict[tuple[str, str, int], list[tuple[list[Measured], int]]]


def source_of(found: Found) -> str:
    return found.name.split("/", 1)[0] if "/" in found.name else found.kind


def replay_one(
    found: Found, budgets: list[int], sizing: engine.Sizing | None
) -> tuple[str, dict[str, object]]:
    """Every policy at every budget for one run (runs in a worker process)."""
    p = prepare(load(found))
    out: dict[str, object] = {"minimum": p.minimum, "notes": p.run.notes}
    whole = sliding.append_only(p)  # no window: every request whole (the minimum's policy)
    for b in budgets:
        out[f"sliding/{b}"] = sliding.replay(p, b)
        out[f"whole/{b}"] = whole
        if sizing is not None:
            res = engine.replay(p, b, sizing)
            out[f"engine/{b}"] = res.requests
            out[f"trims/{b}"] = res.trims
    return found.name, out


def row(label: str, f: Figures) -> str:
    return (
        f"{label:<24} {f.runs:>4} {f.requests:>6} {f.cached_share:>7.3f} {f.uncached_ratio:>8.2f}x"
        f" {f.full_prefills:>6} {f.over_budget:>5} {f.occupancy:>6.2f} {f.visible:>8.3f}"
    )


HEADER = (
    f"{'policy @ budget':<24} {'runs':>4} {'reqs':>6} {'cached':>7} {'uncached':>9}"
    f" {'fulls':>6} {'over':>5} {'occup':>6} {'visible':>8}"
)


def check(f: Figures) -> list[str]:
    """The targets at 32 Ki a figure set misses."""
    missed = []
    if f.cached_share < TARGETS["cached_share"]:
        missed.append(f"cached share {f.cached_share:.3f} < {TARGETS['cached_share']}")
    if f.uncached_ratio > TARGETS["uncached_ratio"]:
        missed.append(f"uncached {f.uncached_ratio:.2f}x > {TARGETS['uncached_ratio']}x")
    if f.over_budget > TARGETS["over_budget"]:
        missed.append(f"{f.over_budget} requests over the budget")
    if f.visible < TARGETS["visible"]:
        missed.append(f"visible {f.visible:.3f} < {TARGETS['visible']}")
    return missed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "folder", type=Path, help="a workload folder (e.g. ../shared/workloads), a source or a run"
    )
    ap.add_argument("--budgets", default="16,32,64", help="budgets in Ki tokens (default 16,32,64)")
    ap.add_argument("--low-water", type=float, default=0.5, help="low water as a share of the budget")
    ap.add_argument(
        "--max-result-tokens", type=int, default=None, help="result cap (default: the window's rule)"
    )
    ap.add_argument(
        "--low-water-above-prefix",
        action="store_true",
        help="low water that share of the way from the fixed prefix (system, tools, task) to the budget",
    )
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--limit", type=int, default=None, help="replay only the first N runs")
    ap.add_argument("--baseline-only", action="store_true", help="replay only the sliding window")
    ap.add_argument("--by-source", action="store_true", help="also print each source folder's figures")
    args = ap.parse_args(argv)
    try:
        budgets = [int(x) * KI for x in args.budgets.split(",") if x.strip()]
    except ValueError:
        ap.error(
            f"--budgets {args.budgets!r}: give whole numbers of Ki tokens separated by commas, e.g. 16,32,64"
        )
    sizing = (
        None
        if args.baseline_only
        else engine.Sizing(
            low_water=args.low_water,
            max_result_tokens=args.max_result_tokens,
            above_prefix=args.low_water_above_prefix,
        )
    )
    try:
        runs = find(args.folder)
    except WorkloadError as exc:
        print(f"window_workloads: {exc}", file=sys.stderr)
        return 2
    if args.limit:
        runs = runs[: args.limit]
    started = time.perf_counter()
    results: Results = defaultdict(list)
    trims: dict[tuple[str, int], int] = defaultdict(int)
    by_name = {f.name: f for f in runs}
    try:
        if args.jobs > 1:
            with ProcessPoolExecutor(args.jobs) as pool:
                done = list(pool.map(replay_one, runs, [budgets] * len(runs), [sizing] * len(runs)))
        else:
            done = [replay_one(f, budgets, sizing) for f in runs]
    except WorkloadError as exc:
        print(f"window_workloads: {exc}", file=sys.stderr)
        return 2
    for name, out in done:
        minimum = out["minimum"]
        assert isinstance(minimum, int)
        src = source_of(by_name[name])
        for b in budgets:
            for policy in POLICIES:
                reqs = out.get(f"{policy}/{b}")
                if isinstance(reqs, list):
                    for key in (("all", policy, b), (src, policy, b)):
                        results[key].append((reqs, minimum))
            t = out.get(f"trims/{b}")
            if isinstance(t, int):
                trims[("all", b)] += t
    elapsed = time.perf_counter() - started
    sources = ["all"] + (sorted({source_of(f) for f in runs}) if args.by_source else [])
    for src in sources:
        print(f"\n== {src}" if src != "all" else f"== {len(runs)} runs from {args.folder}")
        print(HEADER)
        for b in budgets:
            for policy in POLICIES:
                if results[(src, policy, b)]:
                    print(row(f"{policy} @ {b // KI} Ki", figures(results[(src, policy, b)], b)))
    if TARGET_BUDGET in budgets and results[("all", "engine", TARGET_BUDGET)]:
        f = figures(results[("all", "engine", TARGET_BUDGET)], TARGET_BUDGET)
        missed = check(f)
        print(
            "\ntargets at 32 Ki (cached >= 0.95, uncached <= 1.3x, none over, visible >= 0.65): "
            + ("all met" if not missed else "missed: " + "; ".join(missed))
        )
        print(
            f"engine at 32 Ki: {trims[('all', TARGET_BUDGET)]} trim points; requests that broke the prefix "
            f"sent {f.refill_share:.0%} of the uncached bytes; on average {f.hidden_by_caps:.1%} of the "
            f"conversation was hidden by result caps and {1 - f.visible - f.hidden_by_caps:.1%} by elision"
        )
    print(f"\nreplayed in {elapsed:.1f} s with {args.jobs} worker(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
