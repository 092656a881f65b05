"""A bootstrap over runs of a recipe's cost and visible share, and of its difference from another's.

Runs are resampled with replacement (paired: both recipes' figures from the same resample), and each
resample's figures are those of ``nodwyn.whatif.measure.figures`` on it: cost is Σ uncached bytes /
Σ append-only minimum, visible the mean over requests of the share shown. Used by
``bench/window_workloads.py``; pure, seeded, so a rerun prints the same intervals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nodwyn.whatif.measure import Measured

RESAMPLES = 1000
SEED = 21


@dataclass(frozen=True, slots=True, kw_only=True)
class _Run:
    uncached: int  # Σ (stream - cached) bytes of the run's requests
    minimum: int
    visible: float  # Σ of each request's visible share
    requests: int


def _run(reqs: Sequence[Measured], minimum: int) -> _Run:
    uncached = visible = 0.0
    n = 0
    for r in reqs:
        uncached += r.stream - r.cached
        if r.side:
            continue
        n += 1
        visible += r.visible / r.conversation if r.conversation else 1.0
    return _Run(uncached=int(uncached), minimum=minimum, visible=visible, requests=n)


def _figures(runs: Sequence[_Run]) -> tuple[float, float]:
    minimum = sum(r.minimum for r in runs)
    n = sum(r.requests for r in runs)
    cost = sum(r.uncached for r in runs) / minimum if minimum else 1.0
    return cost, (sum(r.visible for r in runs) / n if n else 1.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class Interval:
    value: float  # on the runs as measured
    low: float  # 2.5th percentile of the resamples
    high: float  # 97.5th

    def __str__(self) -> str:
        return f"{self.value:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


def _interval(value: float, samples: list[float]) -> Interval:
    s = sorted(samples)
    return Interval(value=value, low=s[int(0.025 * len(s))], high=s[min(int(0.975 * len(s)), len(s) - 1)])


def bootstrap(
    a: Sequence[tuple[Sequence[Measured], int]],
    b: Sequence[tuple[Sequence[Measured], int]],
    draw: Callable[[int], int],
    resamples: int = RESAMPLES,
) -> dict[str, Interval]:
    """Intervals of ``a``'s cost and visible share and of ``a - b`` for both; ``a`` and ``b`` list
    the same runs in the same order. ``draw(n)`` picks an index below ``n`` (``random.Random(SEED)
    .randrange`` from the caller: the layer is pure, so the randomness comes in)."""
    if len(a) != len(b) or not a:
        raise ValueError(f"bootstrap: {len(a)} runs against {len(b)}; both recipes need the same runs")
    ra, rb = [_run(*x) for x in a], [_run(*x) for x in b]
    samples: dict[str, list[float]] = {k: [] for k in ("cost", "visible", "d_cost", "d_visible")}
    for _ in range(resamples):
        pick = [draw(len(ra)) for _ in ra]
        ca, va = _figures([ra[i] for i in pick])
        cb, vb = _figures([rb[i] for i in pick])
        for key, value in (("cost", ca), ("visible", va), ("d_cost", ca - cb), ("d_visible", va - vb)):
            samples[key].append(value)
    ca, va = _figures(ra)
    cb, vb = _figures(rb)
    measured = {"cost": ca, "visible": va, "d_cost": ca - cb, "d_visible": va - vb}
    return {k: _interval(measured[k], v) for k, v in samples.items()}
