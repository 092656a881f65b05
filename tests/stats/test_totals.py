from __future__ import annotations

import pytest

from nodwyn.stats.cost import reply_cost
from nodwyn.stats.totals import Aggregator
from nodwyn.values.model import Prices
from nodwyn.values.request import Usage

from .conftest import Session, totals_of


def test_rate_sums_tokens_across_turns_and_models_before_dividing() -> None:
    s = Session()
    s.user("first")
    s.call("big", prompt_tokens=1000, cached_tokens=900, output_tokens=10)
    s.call("small", prompt_tokens=100, cached_tokens=0, output_tokens=5)
    s.user("second")
    s.call("big", prompt_tokens=9000, cached_tokens=8000, output_tokens=20)
    t = totals_of(s.events)

    assert t.all.rate_cached == 8900
    assert t.all.rate_prompt == 10100
    assert t.all.cache_rate == pytest.approx(8900 / 10100)
    # not the mean of the three request percentages
    assert t.all.cache_rate != pytest.approx((0.9 + 0.0 + 8000 / 9000) / 3)
    assert t.turns == 2
    turns = dict(t.by_turn)
    assert turns[1].rate_prompt == 1100 and turns[1].rate_cached == 900
    assert turns[2].cache_rate == pytest.approx(8000 / 9000)
    models = dict(t.by_model)
    assert models["big"].cache_rate == pytest.approx(8900 / 10000)
    assert models["small"].cache_rate == 0.0
    assert models["big"].requests == 2 and models["small"].replies == 1
    assert t.all.uncached_tokens == 100 + 100 + 1000
    assert t.all.output_tokens == 35
    assert t.last_rate == pytest.approx(8000 / 9000)


def test_zero_cached_is_zero_percent_but_no_report_is_unknown() -> None:
    zero = Session()
    zero.call(prompt_tokens=500, cached_tokens=0)
    assert totals_of(zero.events).all.cache_rate == 0.0

    unreported = Session()
    unreported.call(prompt_tokens=500, cached_tokens=None)
    t = totals_of(unreported.events)
    assert t.all.cache_rate is None
    assert t.all.prompt_tokens == 500  # still counted as prompt tokens, just not in the rate
    assert t.last_rate is None

    no_prompt = Session()
    no_prompt.call(prompt_tokens=0, cached_tokens=0)
    assert totals_of(no_prompt.events).all.cache_rate is None

    empty = Session()
    assert totals_of(empty.events).all.cache_rate is None


def test_replies_without_cache_reports_stay_out_of_both_sums() -> None:
    s = Session()
    s.call(prompt_tokens=1000, cached_tokens=500)
    s.call(prompt_tokens=100000, cached_tokens=None)  # e.g. a provider that reports no reads
    t = totals_of(s.events)
    assert t.all.cache_rate == 0.5
    assert t.all.rate_replies == 1
    assert t.all.prompt_tokens == 101000


def test_missing_and_malformed_usage_are_counted_not_guessed() -> None:
    s = Session()
    s.call(prompt_tokens=1000, cached_tokens=250)
    bare = s.req()
    s.add("llm.resp", {"req": bare, "response": {"text": "no usage at all"}})
    broken = s.req()
    s.add("llm.resp", {"req": broken, "response": {"text": "x", "usage": {"prompt_tokens": "many"}}})
    s.add("llm.resp", {"req": 999, "response": {"text": "orphan"}})
    unanswered = s.req()
    t = totals_of(s.events)

    assert t.all.requests == 4
    assert t.all.replies == 3
    assert t.all.no_usage == 2
    assert t.all.cache_rate == 0.25
    assert any("prompt_tokens" in p for p in t.problems)
    assert any("999" in p for p in t.problems)
    agg = Aggregator()
    agg.feed_all(s.events)
    row = agg.row(unanswered)
    assert row is not None and row.usage is None and row.rate is None


def test_anthropic_prompt_includes_cache_reads_and_writes() -> None:
    # Anthropic reported input_tokens=50, cache_read_input_tokens=1000, cache_creation_input_tokens=200;
    # the dialect records the whole prompt: 1250.
    s = Session()
    s.call("claude", prompt_tokens=1250, cached_tokens=1000, cache_write_tokens=200, output_tokens=100)
    prices = Prices(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75)
    t = totals_of(s.events, {"claude": prices})
    assert t.all.cache_rate == pytest.approx(1000 / 1250)
    assert t.all.cache_write_tokens == 200
    assert t.all.uncached_tokens == 250
    expected = (50 * 3.0 + 1000 * 0.3 + 200 * 3.75 + 100 * 15.0) / 1e6
    assert t.all.cost_usd == pytest.approx(expected)
    assert t.all.cost_unknown == 0


def test_cost_defaults_and_unknowns() -> None:
    # reads and writes default to the input price
    c = reply_cost(
        Usage(prompt_tokens=1000, cached_tokens=400, output_tokens=10), Prices(input=2.0, output=8.0)
    )
    assert c.usd == pytest.approx((1000 * 2.0 + 10 * 8.0) / 1e6) and c.complete
    partial = reply_cost(Usage(prompt_tokens=1000), Prices(input=2.0, output=8.0))
    assert not partial.complete and partial.usd == pytest.approx(2000 / 1e6)

    s = Session()
    s.call("priced", prompt_tokens=1000, cached_tokens=0, output_tokens=0)
    s.call("unpriced", prompt_tokens=1000, cached_tokens=0, output_tokens=0)
    t = totals_of(s.events, {"priced": Prices(input=1.0)})
    assert t.all.cost_usd == pytest.approx(0.001)
    assert t.all.cost_unknown == 1
    assert dict(t.by_model)["unpriced"].cost_unknown == 1


def test_aggregator_is_incremental_and_caches_its_snapshot() -> None:
    s = Session()
    for i in range(6):
        s.user(f"turn {i}")
        s.call(prompt_tokens=1000 * (i + 1), cached_tokens=900 * i, output_tokens=3)
    whole = totals_of(s.events)

    agg = Aggregator()
    half = len(s.events) // 2
    agg.feed_all(s.events[:half])
    first = agg.totals()
    assert agg.totals() is first  # no new event: the same snapshot, nothing recomputed
    agg.feed_all(s.events)  # overlapping range: the first half is ignored
    assert agg.fed == len(s.events)
    after = agg.totals()
    assert after is not first
    assert after.all == whole.all
    assert after.by_turn == whole.by_turn
    assert [r.seq for r in agg.rows_updated_after(s.events[half - 1].seq)] == [
        r.seq for r in agg.rows if r.updated > s.events[half - 1].seq
    ]
    assert len(agg.rows_updated_after(s.events[half - 1].seq)) < len(agg.rows)


def test_rows_name_what_moved_the_prefix_and_flag_unexplained_drops() -> None:
    s = Session()
    s.user()
    a = s.call(prompt_tokens=5000, cached_tokens=0)
    b = s.call(prompt_tokens=6000, cached_tokens=4990)  # read a's prompt: a hit
    c = s.call(prompt_tokens=7000, cached_tokens=0)  # read nothing, nothing moved: suspected miss
    fold = s.add("result.fold", {"target": 3, "text": "folded"})
    d = s.call(prompt_tokens=7100, cached_tokens=100)
    e = s.req(trim=True)
    s.resp(e, prompt_tokens=3000, cached_tokens=0)
    switch = s.add("model.switch", {"model": "m2"})
    f = s.call("m2", prompt_tokens=3100, cached_tokens=0)
    sub = s.call(ctx="sub-1", prompt_tokens=800, cached_tokens=0)
    agg = Aggregator()
    agg.feed_all(s.events)
    rows = {r.seq: r for r in agg.rows}

    assert rows[a].predecessor is None and not rows[a].drop
    assert rows[b].predecessor == a and not rows[b].drop
    assert rows[c].drop and rows[c].causes == ()
    assert [(x.kind, x.seq) for x in rows[d].causes] == [("fold", fold)] and not rows[d].drop
    assert [(x.kind, x.seq) for x in rows[e].causes] == [("trim", e)]
    assert [(x.kind, x.seq) for x in rows[f].causes] == [("model switch", switch)]  # named once
    assert rows[sub].predecessor is None and rows[sub].ctx == "sub-1"


@pytest.mark.parametrize(("version", "moves"), [(14, True), (15, False)])
def test_a_new_task_moves_the_prefix_only_before_v15(version: int, moves: bool) -> None:
    s = Session(version)
    s.user("one")
    s.call(prompt_tokens=1000, cached_tokens=0)
    task = s.user("two")
    plan = s.add("gate.plan", {"text": "1. read 2. write"})
    second = s.call(prompt_tokens=1100, cached_tokens=0)
    agg = Aggregator()
    agg.feed_all(s.events)
    row = agg.row(second)
    assert row is not None
    expected = [("new task", task), ("plan", plan)] if moves else []
    assert [(c.kind, c.seq) for c in row.causes] == expected
    assert row.drop is not moves


def test_the_windows_recorded_move_reasons_become_causes_not_repeated() -> None:
    s = Session()
    s.user()
    s.call(prompt_tokens=1000, cached_tokens=0)
    fold = s.add("result.fold", {"target": 3, "text": "folded"})
    moved = s.req(moved=["fold", "blocks"])
    s.resp(moved, prompt_tokens=900, cached_tokens=0)
    odd = s.req(moved=["messages"])
    s.resp(odd, prompt_tokens=950, cached_tokens=0)
    agg = Aggregator()
    agg.feed_all(s.events)
    row = agg.row(moved)
    assert row is not None
    assert [(c.kind, c.seq) for c in row.causes] == [("fold", fold), ("blocks", moved)]
    other = agg.row(odd)
    assert other is not None and [(c.kind, c.seq) for c in other.causes] == [("messages", odd)]


def test_summaries_resumes_and_narrowings_are_named_with_their_seqs() -> None:
    s = Session()
    s.user()
    s.call(prompt_tokens=1000, cached_tokens=0)
    summary = s.add(
        "summary.add", {"first": 2, "last": 4, "text": "s", "source_digest": "sha256:" + "1" * 64}
    )
    a = s.call(prompt_tokens=900, cached_tokens=0)
    resume = s.add("session.resume", {"recipe": s.events[0].data["recipe"], "model": "m1"})
    b = s.call(prompt_tokens=950, cached_tokens=0)
    s.call(ctx="narrow-1", prompt_tokens=300, cached_tokens=0)
    opened = s.add("ctx.open", {"id": "narrow-1", "kind": "narrow"}, ctx="narrow-1")
    c = s.call(ctx="narrow-1", prompt_tokens=310, cached_tokens=0)
    agg = Aggregator()
    agg.feed_all(s.events)
    rows = {seq: agg.row(seq) for seq in (a, b, c)}
    named = {seq: [(x.kind, x.seq) for x in row.causes] for seq, row in rows.items() if row is not None}
    assert named == {a: [("summary", summary)], b: [("resume", resume)], c: [("narrowing", opened)]}
