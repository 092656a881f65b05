"""An eval's results, from the person's store alone (``nodwyn eval report ID`` needs no rerun).

Each counted run's figures come from its session's log through ``stats.totals.Aggregator`` (the
same sums ``nodwyn stats`` prints); the verdict from its tags (``records.py``); the intervals and
the paired differences from ``stats.evals``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import orjson

from nodwyn.errors import NotFoundError
from nodwyn.evals.records import Recorded, eval_folder, recorded
from nodwyn.log import Store
from nodwyn.stats import Aggregator, Cell, Difference, RunFigures, cells, differences, seconds_between
from nodwyn.values.events import TOOL_RESULT


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    eval_id: str
    runs: tuple[RunFigures, ...]  # counted runs, in task, variant, run order
    lost: tuple[Recorded, ...]  # runs with no verdict (never in a share)
    cells: tuple[Cell, ...]
    differences: tuple[Difference, ...]


def figures(store: Store, rec: Recorded) -> RunFigures:
    base = RunFigures(
        task=rec.key.task,
        variant=rec.key.variant,
        run=rec.key.run,
        session=rec.session,
        solved=rec.solved,
        reason=rec.reason,
        attempt=rec.attempt,
    )
    if rec.session is None:
        return base
    agg = Aggregator()
    calls = 0
    first = last = None
    with store.open(rec.session) as log:
        for event in log.read(1):
            agg.feed(event)
            calls += event.kind == TOOL_RESULT
            first = first or event.t
            last = event.t
    s = agg.totals().all
    return replace(
        base,
        requests=s.requests,
        cached_share=s.cache_rate,
        uncached_tokens=s.uncached_tokens,
        cost_usd=None if s.cost_unknown else s.cost_usd,
        wall_s=None if first is None or last is None else seconds_between(first, last),
        replies=s.replies,
        calls=calls,
        reasoning_per_reply=s.reasoning_tokens / s.replies if s.replies else None,
    )


def report(store: Store, eval_id: str) -> Report:
    records = list(recorded(store, eval_id))
    if not records:
        raise NotFoundError(f"no runs of eval {eval_id!r} in {store.root}; `nodwyn eval SPEC.toml` runs one")
    seen: dict[tuple[str, str, int], Recorded] = {}
    for r in records:  # a run recorded twice would be counted twice: the session's tags win
        seen.setdefault((r.key.task, r.key.variant, r.key.run), r)
    ordered = sorted(seen.values(), key=lambda r: (r.key.task, r.key.variant, r.key.run))
    counted = [figures(store, r) for r in ordered if r.counted]
    tasks = list(dict.fromkeys(r.key.task for r in ordered))
    variants = list(dict.fromkeys(r.key.variant for r in ordered))
    grid = eval_folder(store, eval_id) / "grid.json"
    if grid.is_file():  # the spec's order: its first variant is the baseline
        order = orjson.loads(grid.read_bytes())
        tasks = _in_order(tasks, order.get("tasks", []))
        variants = _in_order(variants, order.get("variants", []))
    return Report(
        eval_id=eval_id,
        runs=tuple(counted),
        lost=tuple(r for r in ordered if not r.counted),
        cells=tuple(cells(counted, variants, tasks)),
        differences=tuple(differences(counted, variants)),
    )


def _in_order(names: list[str], order: list[str]) -> list[str]:
    """``names`` in the spec's ``order``, those it does not name after."""
    return [n for n in order if n in names] + [n for n in names if n not in order]
