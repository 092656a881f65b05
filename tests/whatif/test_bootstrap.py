"""The bootstrap over runs that bench/window_workloads.py prints (issue 28)."""

from __future__ import annotations

import random

import pytest

from nodwyn.whatif.bootstrap import bootstrap
from nodwyn.whatif.measure import Measured


def _req(stream: int, cached: int, visible: int) -> Measured:
    return Measured(
        stream=stream,
        cached=cached,
        size=stream,
        visible=visible,
        conversation=100,
        shortened=0,
        broken=False,
        recent=(1.0, 1.0),
        task_kept=True,
    )


def test_paired_intervals_bracket_the_measured_value_and_a_constant_difference_is_exact() -> None:
    # recipe a costs 10 bytes more per request than b on every run, and shows 0.1 more
    runs_b = [([_req(100, 100 - 10 * k, 50)], 100) for k in range(1, 9)]
    runs_a = [([_req(100, 90 - 10 * k, 60)], 100) for k in range(1, 9)]
    iv = bootstrap(runs_a, runs_b, random.Random(1).randrange, resamples=200)
    assert iv["d_cost"].low == pytest.approx(0.1) and iv["d_cost"].high == pytest.approx(0.1)
    assert iv["d_visible"].value == pytest.approx(0.1)
    assert iv["cost"].low < iv["cost"].value < iv["cost"].high  # runs differ: a real spread
    assert (
        bootstrap(runs_a, runs_b, random.Random(1).randrange, resamples=200) == iv
    )  # seeded: the same intervals


def test_runs_that_do_not_pair_are_refused() -> None:
    with pytest.raises(ValueError, match="same runs"):
        bootstrap([([_req(1, 0, 1)], 1)], [], random.Random(1).randrange)
