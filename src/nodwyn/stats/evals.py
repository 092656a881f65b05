"""The figures of an eval (``nodwyn eval``), pure: a solved share's interval, a paired difference.

A solved share ``k`` of ``n`` gets Wilson's score interval (it stays inside [0, 1] and is honest
at n = 2, where the normal interval is not). Two variants are compared paired by task (ADR 0401):
each task's difference of the variants' mean figures, then the mean of those differences with a
Student-t interval over the tasks (no interval from one task). Nothing here reads a file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054
# Two-sided 95% Student-t quantiles by degrees of freedom (1..30); beyond, the normal one.
_T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Interval:
    """An estimate and its 95% interval; ``low``/``high`` None when there is too little to say."""

    value: float | None
    low: float | None
    high: float | None
    n: int


def t95(df: int) -> float:
    """The two-sided 95% Student-t quantile for ``df`` degrees of freedom (df >= 1)."""
    if df < 1:
        raise ValueError("degrees of freedom must be at least 1")
    return _T95[df - 1] if df <= len(_T95) else Z95


def wilson(solved: int, n: int) -> Interval:
    """The solved share ``solved / n`` with Wilson's 95% score interval; no runs: all unknown."""
    if not 0 <= solved <= n:
        raise ValueError(f"solved {solved} is not between 0 and {n}")
    if n == 0:
        return Interval(value=None, low=None, high=None, n=0)
    p = solved / n
    z2 = Z95 * Z95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    low = 0.0 if solved == 0 else max(0.0, centre - half)  # exact at the ends, not 1 - 1e-16
    high = 1.0 if solved == n else min(1.0, centre + half)
    return Interval(value=p, low=low, high=high, n=n)


def mean_interval(values: Sequence[float]) -> Interval:
    """The mean of ``values`` with a Student-t 95% interval (none from fewer than two values)."""
    n = len(values)
    if n == 0:
        return Interval(value=None, low=None, high=None, n=0)
    mean = math.fsum(values) / n
    if n == 1:
        return Interval(value=mean, low=None, high=None, n=1)
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    half = t95(n - 1) * math.sqrt(var / n)
    return Interval(value=mean, low=mean - half, high=mean + half, n=n)


def paired(a: Mapping[str, Sequence[float]], b: Mapping[str, Sequence[float]]) -> Interval:
    """Variant ``b`` minus variant ``a``, paired by task: per task present in both with values,
    mean(b) - mean(a); then the mean of those differences with its interval over the tasks."""
    diffs = [
        math.fsum(b[t]) / len(b[t]) - math.fsum(a[t]) / len(a[t])
        for t in sorted(a.keys() & b.keys())
        if a[t] and b[t]
    ]
    return mean_interval(diffs)


FIGURES = (
    "requests",
    "cached_share",
    "uncached_tokens",
    "cost_usd",
    "wall_s",
    "replies",
    "calls",
    "reasoning_per_reply",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFigures:
    """One counted run of an eval, as its session's log gives it (``None``: the log has no figure)."""

    task: str
    variant: str
    run: int
    session: str | None
    solved: bool
    reason: str
    attempt: int
    requests: int | None = None
    cached_share: float | None = None
    uncached_tokens: int | None = None
    cost_usd: float | None = None
    wall_s: float | None = None
    replies: int | None = None
    calls: int | None = None
    reasoning_per_reply: float | None = None

    def figure(self, name: str) -> float | None:
        value = getattr(self, name)
        return None if value is None else float(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class Cell:
    """A variant on a task (``task`` None: over every task): its solved share and mean figures."""

    variant: str
    task: str | None
    solved: Interval
    means: tuple[tuple[str, float | None], ...]  # FIGURES order


@dataclass(frozen=True, slots=True, kw_only=True)
class Difference:
    """``variant`` minus ``baseline``, paired by task, per figure (``solved`` first)."""

    baseline: str
    variant: str
    figures: tuple[tuple[str, Interval], ...]


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _cell(variant: str, task: str | None, runs: Sequence[RunFigures]) -> Cell:
    means = tuple((name, _mean([v for r in runs if (v := r.figure(name)) is not None])) for name in FIGURES)
    return Cell(
        variant=variant, task=task, solved=wilson(sum(r.solved for r in runs), len(runs)), means=means
    )


def cells(runs: Sequence[RunFigures], variants: Sequence[str], tasks: Sequence[str]) -> list[Cell]:
    """Per variant, each task's cell then the variant's cell over all tasks."""
    out = []
    for v in variants:
        mine = [r for r in runs if r.variant == v]
        out += [_cell(v, t, [r for r in mine if r.task == t]) for t in tasks]
        out.append(_cell(v, None, mine))
    return out


def _by_task(runs: Sequence[RunFigures], variant: str, name: str) -> dict[str, list[float]]:
    table: dict[str, list[float]] = {}
    for r in runs:
        if r.variant != variant:
            continue
        value = float(r.solved) if name == "solved" else r.figure(name)
        if value is not None:
            table.setdefault(r.task, []).append(value)
    return table


def differences(runs: Sequence[RunFigures], variants: Sequence[str]) -> list[Difference]:
    """Every variant against the first (the baseline), paired by task."""
    if not variants:
        return []
    base = variants[0]
    return [
        Difference(
            baseline=base,
            variant=v,
            figures=tuple(
                (name, paired(_by_task(runs, base, name), _by_task(runs, v, name)))
                for name in ("solved", *FIGURES)
            ),
        )
        for v in variants[1:]
    ]
