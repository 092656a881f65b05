"""The provider's diagnosis beside ours (ADR 0312): which pairs disagree."""

from __future__ import annotations

import pytest

from nodwyn.stats.diagnosis import Diagnosis, Kind, beside_provider
from nodwyn.stats.totals import RequestRow
from nodwyn.values.request import CacheReport


def _row(report: CacheReport | None) -> RequestRow:
    return RequestRow(
        seq=5,
        ctx="main",
        model="m",
        turn=1,
        trim=False,
        estimate=None,
        predecessor=3,
        causes=(),
        provider=report,
    )


@pytest.mark.parametrize(
    ("kind", "reason", "disagrees"),
    [
        ("appended", None, False),
        ("appended", "messages_changed", True),
        ("server miss", "system_changed", True),
        ("server miss", "unavailable", False),
        ("moved", None, True),
        ("moved", "model_changed", False),
        ("moved", "input_changed", False),
        ("moved", "pending", False),
        ("first", "messages_changed", False),
        ("unverified", None, False),
    ],
)
def test_a_disagreement_is_one_saying_moved_and_the_other_held(
    kind: Kind, reason: str | None, disagrees: bool
) -> None:
    d = Diagnosis(seq=5, ctx="main", model="m", predecessor=3, kind=kind)
    got = beside_provider(d, _row(CacheReport(against="msg_1", reason=reason, missed_tokens=7)))
    assert (got.provider_asked, got.provider_reason, got.provider_missed, got.disagrees) == (
        True,
        reason,
        7,
        disagrees,
    )
    assert beside_provider(d, _row(None)) == d  # nothing asked: nothing beside it
