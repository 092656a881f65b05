"""The pure figures of ``nodwyn eval``: Wilson's interval, the t interval, the paired difference,
and the cells and differences built from run rows."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodwyn.stats.evals import RunFigures, cells, differences, mean_interval, paired, t95, wilson


def test_wilson_matches_the_textbook_values() -> None:
    i = wilson(8, 10)  # Wilson 95%: 0.4902 .. 0.9433
    assert i.value == 0.8 and i.low is not None and i.high is not None
    assert math.isclose(i.low, 0.4902, abs_tol=1e-4) and math.isclose(i.high, 0.9433, abs_tol=1e-4)
    none = wilson(0, 2)
    assert none.value == 0.0 and none.low == 0.0 and none.high is not None and 0.6 < none.high < 0.7
    assert wilson(0, 0).value is None


def test_wilson_refuses_more_solved_than_runs() -> None:
    with pytest.raises(ValueError):
        wilson(3, 2)


@given(st.integers(min_value=1, max_value=500), st.data())
def test_wilson_holds_the_share_and_stays_in_zero_one(n: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(min_value=0, max_value=n))
    i = wilson(k, n)
    assert i.low is not None and i.high is not None
    assert 0.0 <= i.low <= k / n <= i.high <= 1.0


def test_mean_interval_is_students_t() -> None:
    i = mean_interval([1.0, 2.0, 3.0])  # mean 2, sd 1, t(2) = 4.303
    assert i.value == 2.0 and i.low is not None and i.high is not None
    assert math.isclose(i.high - 2.0, 4.303 / math.sqrt(3), rel_tol=1e-9)
    assert mean_interval([5.0]).low is None and mean_interval([]).value is None
    assert t95(1) == 12.706 and t95(200) < 2


def test_paired_takes_each_tasks_mean_difference() -> None:
    a = {"x": [1.0, 1.0], "y": [0.0, 1.0], "only-a": [9.0]}
    b = {"x": [0.0, 0.0], "y": [1.0, 1.0]}
    d = paired(a, b)  # x: -1, y: +0.5; only-a has no pair
    assert d.n == 2 and d.value == -0.25


def _row(task: str, variant: str, run: int, solved: bool, requests: int) -> RunFigures:
    return RunFigures(
        task=task,
        variant=variant,
        run=run,
        session=None,
        solved=solved,
        reason="",
        attempt=1,
        requests=requests,
    )


def test_cells_and_differences_from_rows() -> None:
    rows = [
        _row("t1", "A", 1, True, 2),
        _row("t1", "A", 2, True, 4),
        _row("t1", "B", 1, False, 6),
        _row("t1", "B", 2, True, 6),
        _row("t2", "A", 1, False, 1),
        _row("t2", "B", 1, False, 3),
    ]
    got = {(c.variant, c.task): c for c in cells(rows, ["A", "B"], ["t1", "t2"])}
    assert got[("A", "t1")].solved.value == 1.0 and dict(got[("A", "t1")].means)["requests"] == 3.0
    assert got[("B", None)].solved.n == 3 and got[("B", None)].solved.value == pytest.approx(1 / 3)
    (d,) = differences(rows, ["A", "B"])
    figs = dict(d.figures)
    assert d.baseline == "A" and figs["solved"].value == pytest.approx(-0.25)  # t1: -0.5, t2: 0
    assert figs["requests"].value == pytest.approx(2.5)  # t1: 6 - 3, t2: 3 - 1
