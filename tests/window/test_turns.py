"""Tool-less and partial turns (v7), the output cap (v8), headroom (v10), folds (v9)."""

from __future__ import annotations

import pytest

from nodwyn.errors import NotFoundError
from nodwyn.values.content import ToolMessage
from nodwyn.values.recipe import WindowLimits
from nodwyn.window import TurnOptions, build_window

from .sessions import ORIGIN_A, batch, started


def test_a_turn_without_tools_omits_the_catalog_and_records_it() -> None:
    sim = started(7)
    sim.user("plan only")
    full = sim.window.build(origin=ORIGIN_A)
    b = sim.request(turn=TurnOptions(no_tools=True))
    assert b.request.tools == () and b.record.no_tools is True
    assert b.record.estimate == full.record.estimate  # the budget counts the whole catalog
    again = build_window(sim.before(sim.built[-1].seq), origin=ORIGIN_A, turn=TurnOptions(no_tools=True))
    assert again.digest == b.digest


def test_a_turn_with_some_tools_offers_them_in_catalog_order() -> None:
    sim = started(19)
    sim.user("read only")
    b = sim.request(turn=TurnOptions(offered_tools=("shell", "fs-read")))
    assert [t.name for t in b.request.tools] == ["fs-read", "shell"]
    assert b.record.offered_tools == ("fs-read", "shell")
    with pytest.raises(NotFoundError, match="not in the session's frozen catalog"):
        sim.window.build(origin=ORIGIN_A, turn=TurnOptions(offered_tools=("rm-rf",)))


def test_before_v7_a_turn_gets_the_whole_catalog() -> None:
    sim = started(6)
    sim.user("ask")
    b = sim.request(turn=TurnOptions(no_tools=True))
    assert len(b.request.tools) == 4 and b.record.no_tools is None


def test_the_output_cap_from_v8() -> None:
    for version, cap in ((7, None), (8, 200)):
        sim = started(
            version,
            limits=WindowLimits(
                high_water=900, low_water=450, max_result_tokens=80, output_reserve=200, ceiling=1400
            ),
        )
        sim.user("ask")
        b = sim.request()
        assert b.request.max_output == cap and b.record.max_output == cap


def test_headroom_lets_a_request_past_high_water_up_to_the_ceiling() -> None:
    lim = WindowLimits(high_water=600, low_water=300, max_result_tokens=2000, output_reserve=50, ceiling=1200)
    sim = started(10, limits=lim)
    sim.user("ask")
    for cid in "abcd":
        batch(sim, [(cid, "r" * 300)])
    b = sim.request(turn=TurnOptions(headroom=True))
    assert lim.high_water < b.decision.before <= lim.ceiling
    assert b.record.elided == () and b.record.headroom is True and b.record.high_water == lim.ceiling
    plain = sim.window.build(origin=ORIGIN_A)  # the same window without headroom trims
    assert plain.record.trim is True
    old = started(9, limits=lim)
    old.user("ask")
    for cid in "abcd":
        batch(old, [(cid, "r" * 300)])
    assert old.request(turn=TurnOptions(headroom=True)).record.headroom is None


def test_a_fold_replaces_a_result_in_later_windows_from_v9() -> None:
    for version, folded in ((8, False), (9, True)):
        sim = started(version)
        sim.user("ask")
        _, _, (seq,) = batch(sim, [("a", "a long failed attempt")])
        before = sim.request()
        sim.fold(seq, "[folded: failed attempt]")
        after = sim.request()
        m = after.request.messages[after.seqs.index(seq)]
        assert isinstance(m, ToolMessage)
        assert (m.text == "[folded: failed attempt]") is folded
        assert ("fold" in (after.record.moved or ())) is folded
        assert isinstance(before.request.messages[-1], ToolMessage)
