"""The console in Debian's chromium (Playwright), served from the test on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from nodwyn.log import Store

from .conftest import Writer
from .served import Served

pytestmark = pytest.mark.browser


def _rate_cell(page: Any) -> str:
    return str(page.locator('#totals tr[data-row="rate"] td.value').inner_text())


def _open(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']", timeout=15000)


def test_totals_render_the_weighted_token_cache_rate(store: Store, console: Served, page: Any) -> None:
    w = Writer(store.create())
    w.user("first task")
    w.turn(1000, 900)
    w.turn(100, 0, model="small")
    w.user("second task")
    w.turn(9000, 8000)
    _open(page, f"{console.url}/s/{w.id}")
    assert page.locator('#totals tr[data-row="rate"] th').inner_text() == "Token cache rate"
    assert _rate_cell(page) == f"{round(8900 / 10100 * 100)}%"  # 88%, not the mean of 90%, 0%, 89%
    assert page.locator('#totals tr[data-row="uncached"] td.value').inner_text() == "1,200"
    assert page.locator("#chart g.bar").count() == 3
    page.locator("#requests-details summary").click()
    table = page.locator("#requests tbody tr")
    expect(table).to_have_count(3)  # the rows are drawn when the details open
    assert "0%" in table.nth(1).inner_text() and "small" in table.nth(1).inner_text()
    page.locator("#breakdowns summary").click()
    models = page.locator("#by-model tbody tr").all_inner_texts()
    assert any(m.startswith("small") and "0%" in m for m in models)


def test_unknown_is_not_zero_percent(store: Store, console: Served, page: Any) -> None:
    unreported = Writer(store.create())
    unreported.user("local model, no cache counts")
    unreported.turn(3000, None)
    zero = Writer(store.create())
    zero.user("remote model that read nothing")
    zero.turn(3000, 0)
    _open(page, f"{console.url}/s/{unreported.id}")
    assert _rate_cell(page) == "unknown"
    assert page.locator("#chart rect.unknown").count() == 1
    _open(page, f"{console.url}/s/{zero.id}")
    assert _rate_cell(page) == "0%"
    _open(page, f"{console.url}/")  # the list compares sessions by the same figure
    rate_of = {
        row.locator("td[data-col=id]").inner_text(): row.locator("td[data-col=rate]").inner_text()
        for row in page.locator("#sessions tbody tr").all()
    }
    assert rate_of == {unreported.id: "unknown", zero.id: "0%"}


def test_a_live_reply_appears_and_totals_follow(store: Store, console: Served, page: Any) -> None:
    w = Writer(store.create())
    w.user("watch me")
    w.turn(2000, 0)
    _open(page, f"{console.url}/s/{w.id}")
    assert _rate_cell(page) == "0%"
    seq = w.req()
    w.resp(
        seq,
        "a reply written while the page was open",
        prompt_tokens=2000,
        cached_tokens=2000,
        output_tokens=9,
    )
    page.get_by_text("a reply written while the page was open").wait_for(timeout=10000)
    expect(page.locator('#totals tr[data-row="rate"] td.value')).to_have_text("50%", timeout=10000)
    assert page.locator("#chart g.bar").count() == 2
    assert "SIGNATURE-XYZ" not in page.content()


def test_reopening_a_session_reuses_its_aggregate(store: Store, console: Served, page: Any) -> None:
    w = Writer(store.create())
    w.user("reopen me")
    for i in range(5):
        w.turn(1000 + 100 * i, 1000 + 100 * i - 128 if i else 0)
    _open(page, f"{console.url}/")
    page.get_by_role("link", name=w.id).click()
    page.wait_for_selector("body[data-ready='1']")
    first = _rate_cell(page)
    state = page.evaluate(f"fetch('/api/s/{w.id}/poll?after=0').then(r => r.json())")
    _open(page, f"{console.url}/")
    assert "%" in page.locator("#sessions tbody tr").first.inner_text()  # the list now knows its rate
    page.get_by_role("link", name=w.id).click()
    page.wait_for_selector("body[data-ready='1']")
    assert _rate_cell(page) == first
    again = page.evaluate(f"fetch('/api/s/{w.id}/poll?after=0').then(r => r.json())")
    assert again["totals"]["fed"] == state["totals"]["fed"] == w.log.last_seq  # not fed twice
    assert again["reads"] == state["reads"] == 1  # the log was read once


def test_a_resumed_session_keeps_its_history_in_the_totals(store: Store, console: Served, page: Any) -> None:
    w = Writer(store.create())
    w.user("before the break")
    w.turn(1000, 0)
    w.turn(2000, 1000)
    sid = w.id
    w.log.close()  # the agent exits
    _open(page, f"{console.url}/s/{sid}")
    assert _rate_cell(page) == "33%"
    with store.open(sid, write=True) as log:  # `nodwyn resume`
        again = Writer(log, start="session.resume")
        again.user("after the break")
        again.turn(3000, 2000, text="resumed and answered")
        page.get_by_text("resumed and answered", exact=True).wait_for(timeout=10000)
    expect(page.locator('#totals tr[data-row="rate"] td.value')).to_have_text("50%")  # 3000 of 6000
    assert page.locator('#totals tr[data-row="requests"] td.muted').inner_text() == "2 turns"
