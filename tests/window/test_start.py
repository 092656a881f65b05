"""The start tracker: a window built from its start equals one built from every event."""

from __future__ import annotations

from dataclasses import replace

from nodwyn.window import Start, build_window

from .sessions import LIMITS, ORIGIN_A, Sim, batch, recipe, select, started


def _same_from_start(sim: Sim, ctx: str) -> Start:
    start = sim.window.start
    full = build_window(sim.events, ctx, origin=ORIGIN_A)
    part = build_window(select(start, sim.events), ctx, origin=ORIGIN_A)
    assert part.canonical == full.canonical and part.record == full.record
    return start


def test_the_start_cuts_at_a_lasting_narrowing() -> None:
    sim = started(19)
    sim.user("ask")
    batch(sim, [("a", "x" * 500)])
    sim.open_ctx("n1", "narrow", system="Compacted.")  # does not last: no cut
    sim.user("aside", "n1")
    assert _same_from_start(sim, "n1").seq == 1
    lasting = sim.open_ctx("n2", "narrow", "n1", system="Compacted again.", lasting=True)
    sim.user("go on", "n2")
    batch(sim, [("b", "y")], ctx="n2")
    start = _same_from_start(sim, "n2")
    assert start.seq == lasting.seq
    assert start.keep == (
        1,
        sim.events[[e.kind for e in sim.events].index("ctx.open")].seq,
    )  # recipe, n1's open


def test_cutting_at_a_narrowing_that_does_not_last_would_be_wrong() -> None:
    sim = started(19)
    sim.user("ask")
    opened = sim.open_ctx("n1", "narrow", system="aside")
    sim.user("aside", "n1")
    sim.widen_ctx("n1", "main")
    assert sim.window.start.seq == 1
    wrong = Start(seq=opened.seq, keep=(1,))
    full = build_window(sim.events, origin=ORIGIN_A)
    assert build_window(select(wrong, sim.events), origin=ORIGIN_A).canonical != full.canonical


def test_a_session_with_a_summary_is_held_whole() -> None:
    sim = started(19)
    sim.user("ask")
    sim.open_ctx("n1", "narrow", lasting=True)
    sim.user("go on", "n1")
    assert sim.window.start.seq > 1
    sim.summary(2, 2, "s")
    assert sim.window.start == Start(seq=1, keep=())


def test_a_fold_before_the_start_does_not_move_a_request_after_it() -> None:
    """Found by the property tests while adding v20: folds were counted over the whole
    log, so after a resume that turned folds on, the window built from all events said the request
    in a compaction moved by a 'fold' of a result it does not show; the one from the start did not."""
    sim = started(8)
    sim.user("ask")
    _, _, (result,) = batch(sim, [("a", "x" * 500)])
    sim.fold(result, "[folded]")
    sim.open_ctx("n1", "narrow", system="Compacted.", lasting=True)
    sim.user("go on", "n1")
    sim.request("n1")
    sim.resume(recipe(9, limits=replace(LIMITS, output_reserve=300)))  # folds on, a new reply cap
    sim.request("n1")
    assert sim.built[-1].build.record.moved == ("recipe",)  # not "fold": n1 shows no folded result
    _same_from_start(sim, "n1")
