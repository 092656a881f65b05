"""The console explains each miss: a session driven against an OpenRouter-like fake whose
replicas keep caches of their own, with a fold, diagnosed in the page by exact replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from tests.stats.drive import Driver, reading_script, settings
from tests.stats.test_diagnosis_fakes import ROOMY
from tests.stats.test_idle_miss import PAUSE, ShiftedClock, two_requests

from nodwyn.cli.stats import describe
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.replay.diagnose import diagnose_session
from nodwyn.stats.totals import Aggregator

from .served import Served

pytestmark = pytest.mark.browser


def test_the_page_lists_server_misses_and_what_we_moved(root: Path, console: Served, page: Any) -> None:
    store = Store(root, fsync=False)
    with FakeServer(
        api="openai-chat", family="openrouter", cache="replicas", replicas=4, seed=7, script=reading_script(8)
    ) as fake:
        models = {"r": settings(fake.url, "r", "fake-model", family="openrouter", cache_key="off")}
        d = Driver(store, ROOMY, models, "r", session_key=None)
        d.user("Review the repository module by module.")
        reqs = [d.request()[0] for _ in range(5)]
        fold = d.fold(d.results[0])
        reqs += [d.request()[0] for _ in range(3)]
        lookups = fake.lookups
    page.goto(f"{console.url}/s/{d.log.id}")
    page.wait_for_selector("body[data-diagnosed]", timeout=20000)  # small sessions are diagnosed on open

    moved = page.locator("#diagnosis li.diag.moved")
    assert moved.count() == 1 and f"fold at seq {fold}" in moved.inner_text()
    misses = page.locator("#diagnosis li.diag.server-miss")
    assert misses.count() >= 1
    replica = {seq: lk.replica for seq, lk in zip(reqs, lookups, strict=True)}
    for seq in [int(s) for s in misses.evaluate_all("els => els.map(e => e.dataset.seq)")]:
        before = reqs[reqs.index(seq) - 1]
        assert replica[seq] != replica[before]  # the fake served it from another replica
    assert page.locator("#chart path.miss").count() == misses.count()  # the chart marks the verdicts
    summary = page.locator("#diagnosis-summary").inner_text()
    assert f"{misses.count()} server miss" in summary and "1 moved by us" in summary

    # the page words each diagnosis as `nodwyn cache` does (the server sends data only)
    agg = Aggregator()
    agg.feed_all(d.log.read())
    words = {x.seq: describe(x) for x in diagnose_session(d.log, agg.rows)}
    shown = page.locator("#diagnosis li.diag").evaluate_all(
        "els => els.map(e => [Number(e.dataset.seq), e.lastElementChild.textContent])"
    )
    assert len(shown) == moved.count() + misses.count()
    assert {seq: text for seq, text in shown} == {seq: words[seq] for seq, _ in shown}

    misses.first.click()
    expect(page.locator("#window-verify")).to_have_class("ok", timeout=10000)
    assert page.locator("#window-verify").inner_text().startswith("verified")
    assert page.locator("#window-diagnosis").get_attribute("data-kind") == "server miss"
    first_miss = int(misses.first.get_attribute("data-seq") or 0)
    assert page.locator("#window-diagnosis").inner_text() == words[first_miss]


def test_the_page_says_how_long_the_cache_sat_idle_before_a_server_miss(
    root: Path, console: Served, page: Any
) -> None:
    sid = two_requests(root, PAUSE, ShiftedClock(), skip=372.0)  # the log says 6 min 12 s more went by
    page.goto(f"{console.url}/s/{sid}")
    page.wait_for_selector("body[data-diagnosed]", timeout=20000)
    miss = page.locator("#diagnosis li.diag.server-miss")
    assert miss.count() == 1
    agg = Aggregator()
    log = Store(root, fsync=False).open(sid)
    agg.feed_all(log.read())
    words = {x.seq: describe(x) for x in diagnose_session(log, agg.rows)}
    seq = int(miss.get_attribute("data-seq") or 0)
    assert "idle, past the 5-minute lifetime asked for" in words[seq]
    assert miss.evaluate("e => e.lastElementChild.textContent") == words[seq]
