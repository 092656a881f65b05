"""An eval's report as the text table `nodwyn eval` prints and the console shows: a row per
variant and task (and the variant over all tasks), then each variant's paired difference from the
baseline, then the runs not counted with their reasons."""

from __future__ import annotations

from nodwyn.evals.results import Report
from nodwyn.stats import Interval


def _interval(i: Interval, spec: str) -> str:
    """An estimate and its interval, each as ``format(value, spec)``."""
    if i.value is None:
        return "-"
    span = "" if i.low is None or i.high is None else f" [{i.low:{spec}}, {i.high:{spec}}]"
    return f"{i.value:{spec}}{span}"


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _diff(i: Interval, digits: int) -> str:
    return _interval(i, f"+,.{digits}f")


def report_table(rep: Report) -> str:
    head = [
        "variant",
        "task",
        "n",
        "solved [95%]",
        "requests",
        "cached",
        "uncached",
        "cost $",
        "wall s",
        "replies",
        "calls",
        "reason/reply",
    ]
    rows = [head]
    for c in rep.cells:
        m = dict(c.means)
        share = m["cached_share"]
        rows.append(
            [
                c.variant,
                c.task or "(all)",
                str(c.solved.n),
                _interval(c.solved, ".0%"),
                _num(m["requests"]),
                "-" if share is None else f"{share:.0%}",
                _num(m["uncached_tokens"], 0),
                _num(m["cost_usd"], 4),
                _num(m["wall_s"]),
                _num(m["replies"]),
                _num(m["calls"]),
                _num(m["reasoning_per_reply"], 0),
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    for d in rep.differences:
        f = dict(d.figures)
        lines.append(
            f"{d.variant} - {d.baseline}, paired by task (n={f['solved'].n}): "
            f"solved {_diff(f['solved'], 2)}, "
            f"requests {_diff(f['requests'], 1)}, uncached {_diff(f['uncached_tokens'], 0)}, "
            f"wall s {_diff(f['wall_s'], 1)}, calls {_diff(f['calls'], 1)}"
        )
    for lost in rep.lost:
        lines.append(f"not counted: {lost.key.label()}: {lost.reason}")
    return "\n".join(lines)
