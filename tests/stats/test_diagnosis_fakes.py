"""Each kind of miss, made to happen in a session against a fake provider, and diagnosed.

Sessions are driven with a live Window, HttpBackend and the real log (``drive.py``); the diagnosis
replays every request from the log (``verify_all``) and is checked against what the fake's cache
model reports it did.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nodwyn.cli.stats import describe
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.replay.diagnose import diagnose_session
from nodwyn.stats.diagnosis import Diagnosis
from nodwyn.stats.totals import Aggregator
from nodwyn.values.recipe import WindowLimits

from .drive import Driver, reading_script, settings

ROOMY = WindowLimits(
    high_water=40000, low_water=20000, max_result_tokens=4000, output_reserve=1000, ceiling=50000
)
TIGHT = WindowLimits(
    high_water=9000, low_water=4500, max_result_tokens=4000, output_reserve=1000, ceiling=12000
)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path, fsync=False)


def diagnose(driver: Driver) -> dict[int, Diagnosis]:
    agg = Aggregator()
    agg.feed_all(driver.log.read())
    return {d.seq: d for d in diagnose_session(driver.log, agg.rows)}


@pytest.mark.parametrize("version", [19, 20])
def test_a_trim_is_moved_by_us_and_appends_are_hits(store: Store, version: int) -> None:
    with FakeServer(api="openai-chat", script=reading_script(12)) as fake:
        d = Driver(store, TIGHT, {"m": settings(fake.url, "m", "fake-model")}, "m", version=version)
        d.user("Read the modules one by one and summarise them.")
        reqs = [d.request()[0] for _ in range(12)]
        out = diagnose(d)
    trims = [seq for seq in reqs if out[seq].kind == "moved"]
    assert trims, "the tight window never trimmed: the test did not make the miss happen"
    for seq in trims:
        assert [c.kind for c in out[seq].causes][:1] == ["trim"] and out[seq].causes[0].seq == seq
        assert f"trim at seq {seq}" in describe(out[seq])
        first_difference = out[seq].first_difference
        assert first_difference is not None and first_difference.startswith("message")
    if version >= 20:  # v20 trimmed to its own target, in whole units, and said so
        recorded = {e.seq: e.data for e in d.log.read() if e.kind == "llm.req"}
        assert all("target" in recorded[seq] for seq in trims)
    first, *rest = reqs
    assert out[first].kind == "first"
    appended = [seq for seq in rest if seq not in trims]
    assert appended and all(out[seq].kind == "appended" for seq in appended)
    # the fake's cache read what the diagnosis expected, within a cache block
    for seq in appended:
        cached, expected = out[seq].cached_tokens, out[seq].expected
        assert cached is not None and expected is not None
        assert expected - cached < 128 + 3


def test_a_fold_is_moved_by_us_at_the_folds_seq(store: Store) -> None:
    with FakeServer(api="openai-chat", script=reading_script(5)) as fake:
        d = Driver(store, ROOMY, {"m": settings(fake.url, "m", "fake-model")}, "m")
        d.user("Read the modules.")
        a, _ = d.request()
        b, _ = d.request()
        c, _ = d.request()
        fold = d.fold(d.results[0])
        e, _ = d.request()
        f, _ = d.request()
        out = diagnose(d)
    assert [out[s].kind for s in (a, b, c, e, f)] == ["first", "appended", "appended", "moved", "appended"]
    assert [(x.kind, x.seq) for x in out[e].causes] == [("fold", fold)]
    assert out[e].first_difference == "message 2"  # the user's task, the first reply, then the folded result
    cached, prompt = out[e].cached_tokens, out[e].prompt_tokens
    assert cached is not None and prompt is not None and cached < prompt


def test_a_model_switch_is_moved_by_us(store: Store) -> None:
    with FakeServer(api="openai-chat", script=reading_script(4), models=("model-a", "model-b")) as fake:
        models = {"a": settings(fake.url, "a", "model-a"), "b": settings(fake.url, "b", "model-b")}
        d = Driver(store, ROOMY, models, "a")
        d.user("Read the modules.")
        a, _ = d.request()
        b, _ = d.request()
        switch = d.switch("b")
        c, _ = d.request()
        e, _ = d.request()
        out = diagnose(d)
    assert [out[s].kind for s in (a, b, c, e)] == ["first", "appended", "moved", "appended"]
    assert ("model switch", switch) in [(x.kind, x.seq) for x in out[c].causes]
    assert "model switch at seq" in describe(out[c])


def test_replica_misses_are_the_servers_and_partial_hits_name_the_request_served(store: Store) -> None:
    n = 16
    with FakeServer(
        api="openai-chat", family="openrouter", cache="replicas", replicas=4, seed=7, script=reading_script(n)
    ) as fake:
        models = {"r": settings(fake.url, "r", "fake-model", family="openrouter", cache_key="off")}
        d = Driver(store, ROOMY, models, "r", session_key=None)
        d.user("Review the repository module by module.")
        reqs = [d.request()[0] for _ in range(n)]
        lookups = fake.lookups
    out = diagnose(d)
    replica = {seq: lk.replica for seq, lk in zip(reqs, lookups, strict=True)}
    assert all(out[s].kind in ("appended", "server miss") for s in reqs[1:])  # our prefix always held
    misses = [s for s in reqs[1:] if out[s].kind == "server miss"]
    assert misses, "no replica miss happened: pick another seed"
    for prev, seq in zip(reqs, reqs[1:], strict=False):
        if out[seq].kind == "server miss":
            assert replica[seq] != replica[prev]  # a different replica, without our predecessor
            shortfall, expected = out[seq].shortfall, out[seq].expected
            assert shortfall is not None and expected is not None
            assert shortfall == expected - (out[seq].cached_tokens or 0)
        elif replica[seq] == replica[prev]:
            assert out[seq].kind == "appended"
    partial = [s for s in misses if out[s].matched is not None]
    assert partial, "no partial hit on an older request happened: pick another seed"
    for seq in partial:
        older = out[seq].matched
        assert older is not None and older < seq
        assert replica[older] == replica[seq]  # the replica that served that older request
        assert f"request {older}'s prompt" in describe(out[seq])


def test_anthropics_reads_and_writes_count_as_prompt_tokens(store: Store) -> None:
    with FakeServer(api="anthropic", script=reading_script(4), models=("claude-fake",)) as fake:
        models = {"c": settings(fake.url, "c", "claude-fake", api="anthropic", cache_control="ephemeral")}
        d = Driver(store, ROOMY, models, "c")
        d.user("Read the modules.")
        reqs = [d.request()[0] for _ in range(4)]
        lookups = fake.lookups
    agg = Aggregator()
    agg.feed_all(d.log.read())
    rows = {r.seq: r for r in agg.rows}
    for seq, lk in zip(reqs, lookups, strict=True):
        u = rows[seq].usage
        assert u is not None
        # the wire said input_tokens = what followed the breakpoint; the log holds the whole prompt
        assert u.prompt_tokens == lk.prompt_tokens
        assert (u.cached_tokens, u.cache_write_tokens) == (lk.cached_tokens, lk.cache_write_tokens)
    t = agg.totals().all
    assert t.cache_write_tokens == sum(lk.cache_write_tokens for lk in lookups) > 0
    assert t.cache_rate == pytest.approx(
        sum(lk.cached_tokens for lk in lookups) / sum(lk.prompt_tokens for lk in lookups)
    )
    out = diagnose(d)
    assert [out[s].kind for s in reqs] == ["first", "appended", "appended", "appended"]
