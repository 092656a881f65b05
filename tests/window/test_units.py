"""window-v20 (ADR 0150): whole units oldest first with one marker per run, the trim
target from the run's growth, a kept head; each rule alone; v19 unchanged beside it."""

from __future__ import annotations

from math import isqrt

import pytest

from nodwyn.errors import CorruptLogError
from nodwyn.values.content import AssistantMessage, ToolMessage
from nodwyn.values.recipe import Flag, WindowLimits, policy_for
from nodwyn.window import Window, build_window, units
from nodwyn.window.entries import entry_of
from nodwyn.window.units import V20, Tuning, content_bytes, growth_target

from .sessions import Sim, batch, recipe, started

NO_HEAD = Tuning(growth=V20.growth, floor=V20.floor, ceiling=V20.ceiling, head=0.0, reserve=0)
LIM = WindowLimits(high_water=3000, low_water=1500, max_result_tokens=2000, output_reserve=50, ceiling=3600)


def grow(sim: Sim, n: int, size: int = 900, start: int = 0) -> list[tuple[int, list[int]]]:
    """``n`` batches of one result of ``size`` bytes: [(reply seq, [result seq])]."""
    out = []
    for i in range(start, start + n):
        _, reply, results = batch(sim, [(f"c{i}", f"out {i} " + "r" * size)], text=f"step {i}")
        out.append((reply, results))
    return out


def first_trim(sim: Sim) -> int:
    return next(i for i, b in enumerate(sim.built) if b.build.record.trim)


def test_v20_flags_are_its_three_rules() -> None:
    assert policy_for(20).flags - policy_for(19).flags == {Flag.UNITS, Flag.GROWTH, Flag.HEAD}


def test_whole_units_go_oldest_first_and_a_run_shows_one_marker_naming_it() -> None:
    sim = started(20, limits=LIM)
    sim.user("fix the parser")
    units = grow(sim, 14)
    i = first_trim(sim)
    b = sim.built[i].build
    elided = set(b.record.elided)
    replies = [r for r, _ in units]
    gone = [r for r in replies if r in elided]
    assert len(gone) >= 2
    head = b.record.head
    assert head is not None
    gone_after_head = [r for r in replies if r >= head]
    assert gone == gone_after_head[: len(gone)], "oldest first after the head"
    for reply, results in units:  # whole units: a result goes only with its reply
        assert (reply in elided) == all(r in elided for r in results)
    markers = [
        m for m in b.request.messages if isinstance(m, AssistantMessage) and m.text.startswith("[elided")
    ]
    assert [m.text for m in markers] == [f"[elided seq={gone[0]}..{gone[-1]}]"]
    assert not any(isinstance(m, ToolMessage) and m.text.startswith("[elided") for m in b.request.messages)
    assert b.seqs.count(gone[0]) == 1 and not (set(gone[1:]) & set(b.seqs))


def test_a_persons_message_between_units_splits_the_run() -> None:
    sim = Sim(window=Window(tuning=NO_HEAD))
    sim.start(recipe(20, limits=LIM))
    sim.user("fix the parser")
    grow(sim, 4)
    ask = sim.user("also the lexer").seq
    grow(sim, 30, start=4)
    last = sim.built[-1].build
    texts = [
        m.text
        for m in last.request.messages
        if isinstance(m, AssistantMessage) and m.text.startswith("[elided")
    ]
    assert len(texts) == 2, texts
    first, second = (t.removeprefix("[elided seq=").removesuffix("]").split("..") for t in texts)
    assert int(first[-1]) < ask < int(second[0])


def test_the_next_trim_extends_the_run_and_the_requests_between_only_append() -> None:
    sim = started(20, limits=LIM)
    sim.user("fix the parser")
    grow(sim, 40)
    trims = [b for b in sim.built if b.build.record.trim]
    assert len(trims) >= 2
    for b in sim.built:
        if not b.build.record.trim and b is not sim.built[0]:
            assert b.build.record.moved is None
    last = trims[-1].build
    runs = [m.text for m in last.request.messages if isinstance(m, AssistantMessage) and ".." in m.text]
    assert len(runs) == 1  # one run: the second trim's units follow the first's


def test_the_target_follows_the_runs_growth_and_is_recorded() -> None:
    sim = started(20, limits=LIM)
    sim.user("fix the parser")
    grow(sim, 14)
    built = sim.built[first_trim(sim)]
    rec = built.build.record
    target = rec.target
    assert target is not None
    assert int(V20.floor * LIM.high_water) <= target <= int(V20.ceiling * LIM.high_water)
    assert rec.estimate <= target and rec.high_water == LIM.high_water
    # C and requests come from the log: the conversation before the request, its replies + 1
    conv = [e for e in sim.events[: built.seq - 1] if e.kind in ("user.msg", "llm.resp", "tool.result")]
    size = sum(content_bytes(x) for x in (entry_of(e) for e in conv) if x is not None)
    requests = 1 + sum(e.kind == "llm.resp" for e in conv)
    c_tokens = -(-size // 3)
    deepest = growth_target(V20, budget=LIM.high_water, conversation=c_tokens, requests=requests, before=0)
    assert target >= deepest  # P > 0 leaves less room to trim into than P = 0
    assert growth_target(V20, budget=3000, conversation=9000, requests=30, before=500) == 3000 - int(
        V20.growth * isqrt(9000 * 9000 * 2500 // 30)
    )


def test_a_run_that_grows_faster_trims_deeper() -> None:
    slow = growth_target(V20, budget=32768, conversation=40000, requests=80, before=4000)
    fast = growth_target(V20, budget=32768, conversation=40000, requests=20, before=4000)
    assert fast < slow
    assert growth_target(V20, budget=32768, conversation=10**7, requests=1, before=0) == int(
        V20.floor * 32768
    )
    assert growth_target(V20, budget=32768, conversation=10, requests=10, before=0) == int(
        V20.ceiling * 32768
    )


def test_the_head_is_kept_fixed_in_the_log_and_read_back() -> None:
    wide = Tuning(growth=V20.growth, floor=V20.floor, ceiling=V20.ceiling, head=0.4, reserve=0)
    sim = Sim(window=Window(tuning=wide))
    sim.start(recipe(20, limits=LIM))
    sim.user("fix the parser")
    units = grow(sim, 30, size=600)
    trims = [b for b in sim.built if b.build.record.trim]
    head = trims[0].build.record.head
    assert head is not None
    kept = [r for r, _ in units if r < head]
    assert len(kept) >= 2  # 0.4 of B - S0 holds a few of these units
    for t in trims:
        assert t.build.record.head == head  # fixed by the first trim, then read from the log
        assert not set(t.build.record.elided) & {s for r, rs in units if r < head for s in (r, *rs)}
    # a window whose own constants would put it elsewhere takes the head from the log
    other = Sim(events=list(sim.events), window=Window(tuning=NO_HEAD), version=20)
    other.window.feed_all(sim.events)
    grow(other, 20, size=600, start=30)
    later = [b for b in other.built if b.build.record.trim]
    assert later and all(b.build.record.head == head for b in later)


def test_a_damaged_head_is_refused_naming_its_seq() -> None:
    sim = started(20, limits=LIM)
    sim.user("x")
    sim.request()
    bad = sim.events[-1]
    data = {**bad.data, "head": "4"}
    w = Window()
    w.feed_all(sim.events[:-1])
    with pytest.raises(CorruptLogError, match=rf"llm.req at seq {bad.seq}\.head: expected int"):
        w.feed(type(bad)(seq=bad.seq, t=bad.t, kind=bad.kind, ctx=bad.ctx, data=data))


@pytest.mark.parametrize("flag", [Flag.UNITS, Flag.GROWTH, Flag.HEAD])
def test_each_rule_alone_on_v19(flag: Flag) -> None:
    flags = policy_for(19).flags | {flag}
    sim = Sim(window=Window(flags=flags))
    sim.start(recipe(19, limits=LIM))
    sim.user("fix the parser")
    units = grow(sim, 16)
    rec = sim.built[first_trim(sim)].build.record
    elided = set(rec.elided)
    assert rec.target is not None
    assert (rec.head is not None) is (flag == Flag.HEAD)
    if flag != Flag.GROWTH:
        assert rec.target == LIM.low_water
    whole = all((r in elided) == all(x in elided for x in rs) for r, rs in units)
    assert whole is (flag == Flag.UNITS)  # without UNITS results go first, in place
    for b in sim.built:  # the same builds, from the events alone, with the same flags
        w = Window(flags=flags)
        w.feed_all(sim.before(b.seq))
        again = w.build(b.ctx, origin=b.origin)
        assert again.digest == b.build.digest and again.record == b.build.record


def test_v19_is_unchanged_beside_v20() -> None:
    sim = started(19, limits=LIM)
    sim.user("fix the parser")
    grow(sim, 14)
    for b in sim.built:
        assert b.build.record.target is None and b.build.record.head is None
        assert not any(".." in getattr(m, "text", "") for m in b.build.request.messages)
    rec = sim.built[first_trim(sim)].build.record
    kinds = {sim.events[s - 1].kind for s in rec.elided}
    assert kinds == {"tool.result"}  # results first, in place


def test_resume_from_v19_to_v20_joins_v19s_elided_replies_into_runs() -> None:
    lim = WindowLimits(
        high_water=1800, low_water=300, max_result_tokens=2000, output_reserve=50, ceiling=2000
    )
    sim = started(19, limits=lim)
    sim.user("fix the parser")
    grow(sim, 14, size=400)
    v19 = [b for b in sim.built if b.build.record.trim][-1].build
    assert any(
        isinstance(m, AssistantMessage) and m.text.startswith("[elided seq=") for m in v19.request.messages
    )
    sim.resume(recipe(20, limits=lim))
    b = sim.request()
    assert "recipe" in (b.record.moved or ())
    singles = [
        m for m in b.request.messages if isinstance(m, AssistantMessage) and m.text.startswith("[elided seq=")
    ]
    assert len(singles) == 1  # consecutive elided replies now show as one run
    again = build_window(sim.before(sim.built[-1].seq), origin=sim.built[-1].origin)
    assert again.digest == b.digest and again.record == b.record


def test_v21_deepens_a_trim_with_the_square_root_of_a_scaled_cap() -> None:
    """ADR 0390: growth times sqrt(cap / 3,072), the cap taken between 3,072 and 5,120."""
    from math import sqrt

    from nodwyn.values.recipe import V21_TUNING

    assert units.cap_tuning(V21_TUNING, 3_072) == V21_TUNING
    assert units.cap_tuning(V21_TUNING, 1_000) == V21_TUNING
    assert units.cap_tuning(V21_TUNING, 4_681).growth == pytest.approx(0.020 * sqrt(4_681 / 3_072))
    assert units.cap_tuning(V21_TUNING, 16_384).growth == pytest.approx(0.020 * sqrt(5_120 / 3_072))
    assert units.cap_tuning(V21_TUNING, 4_681).head == V21_TUNING.head


def test_v22_growth_counts_results_as_their_cap_shows_them() -> None:
    """ADR 0460 (``shown_growth``): g = the conversation with each result as capped / requests, so a
    run whose results the cap cuts trims less deep than the same run measured uncut."""
    assert growth_target(
        V20, budget=3000, conversation=9000, requests=30, before=500, shown=4000
    ) == 3000 - int(V20.growth * isqrt(9000 * 4000 * 2500 // 30))
    capped = WindowLimits(  # a cap above 3,072: the wide rules
        high_water=24_000, low_water=12_000, max_result_tokens=3_100, output_reserve=50, ceiling=28_000
    )
    flags = policy_for(22).flags
    targets = {}
    for name, window in (("v22", None), ("uncut", Window(flags=flags - {Flag.SHOWN_GROWTH}))):
        sim = Sim(window=window) if window is not None else Sim()
        sim.start(recipe(22, limits=capped))
        sim.user("fix the parser")
        for i in range(0, 80, 20):  # every 20th result 15 KB, cut to 9,300 bytes by the cap
            grow(sim, 1, size=15_000, start=i)
            grow(sim, 19, start=i + 1)
        b = sim.built[first_trim(sim)]
        targets[name] = b.build.record.target
        if window is None:  # the default rules replay from the log alone
            again = build_window(sim.before(b.seq), origin=b.origin)
            assert again.digest == b.build.digest and again.record == b.build.record
    assert targets["v22"] is not None and targets["uncut"] is not None
    assert targets["v22"] > targets["uncut"]


def test_v22_trims_with_its_wide_constants_above_a_3072_cap() -> None:
    """ADR 0460: a window whose cap is wider than 3,072 (32Ki up) trims with the position's wide
    constants; at 3,072 (16Ki) with v21's; v21 has no wide set."""
    from nodwyn.values.recipe import TRIM_DEPTHS, V21_TUNING, V22_TUNING, WIDE_TRIM_DEPTHS, rules_for

    v22, v21 = rules_for(22), rules_for(21)
    assert v22.tuning_for(3_072) == V21_TUNING and v22.tuning_for(4_096) == V22_TUNING
    assert v21.tuning_for(4_096) == V21_TUNING and v21.wide_tuning is None
    assert V22_TUNING.head < V21_TUNING.head and V22_TUNING.growth < V21_TUNING.growth
    for depth in TRIM_DEPTHS:
        r = rules_for(22, (), depth)
        assert r.tuning == TRIM_DEPTHS[depth] and r.wide_tuning == WIDE_TRIM_DEPTHS[depth]
    wide = WindowLimits(
        high_water=3000, low_water=1500, max_result_tokens=3_100, output_reserve=50, ceiling=3600
    )
    heads = {}
    for version in (21, 22):
        sim = started(version, limits=wide)
        sim.user("fix the parser")
        grow(sim, 20, size=300)
        heads[version] = sim.built[first_trim(sim)].build.record.head
    assert heads[21] is not None and heads[22] is not None
    assert heads[22] <= heads[21]  # a smaller head


def test_v22_with_a_cap_of_3072_or_less_builds_what_v21_builds() -> None:
    """ADR 0460: at a narrow cap (a 16Ki window) v22's rules are v21's, request for request."""
    digests = {}
    for version in (21, 22):
        sim = started(version, limits=LIM)
        sim.user("fix the parser")
        grow(sim, 30)
        assert any(b.build.record.trim for b in sim.built)
        digests[version] = [(b.build.digest, b.build.record.elided, b.build.record.target) for b in sim.built]
    assert digests[21] == digests[22]
