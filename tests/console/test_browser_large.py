"""A 100 MB log stays responsive: the page reads a page of the transcript, not the log.

Timing is measured in bench/console_large_log.py (docs/bench-console.md); this test checks what
makes it fast: the page shows one page of events, transfers a bounded number of bytes, and
loads older events on demand.

The session is the bench's kind (user turns, requests with real digests, replies with thinking, tool
results, trims) in a 60,000-token window with 256 KB results: about 380 requests. Writing it, and
the suite's replay of it, cost the requests' count times their size; the bench's million-token
window and 64 KB results (1,500 requests of up to 1.4 MB) took 90 s to write and 83 s to replay
(ADR 0471). What the console reads is the same: 100 MB of log, a page of it shown.
"""

from __future__ import annotations

from typing import Any

import pytest
from bench.console_large_log import write_session
from playwright.sync_api import expect

from nodwyn.log import Store
from nodwyn.values.recipe import WindowLimits

from .served import Served

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WINDOW = WindowLimits(
    high_water=60000, low_water=30000, max_result_tokens=3000, output_reserve=8000, ceiling=90000
)


def test_a_100_mb_log_opens_a_page_at_a_time(store: Store, console: Served, page: Any) -> None:
    with store.create() as log:
        requests = write_session(log, 100_000_000, WINDOW, result_bytes=256 * 1024)
        sid = log.id
        last = log.last_seq
    assert store.info(sid).size >= 100_000_000
    assert requests > 300 and last > 3 * requests  # a page of 100 events is a small part of it

    received: list[int] = []
    page.on("response", lambda r: received.append(len(r.body())) if "/api/" in r.url else None)
    page.goto(f"{console.url}/s/{sid}")
    page.wait_for_selector("body[data-ready='1']", timeout=30000)

    assert page.locator("#transcript .ev").count() == 100
    assert page.locator("#transcript .ev").last.get_attribute("data-seq") == str(last)
    assert page.locator("#chart g.bar").count() == requests
    assert page.locator('#totals tr[data-row="rate"] td.value').inner_text().endswith("%")
    assert sum(received) < 5_000_000  # the page took a few MB of JSON, not the 100 MB log

    page.locator("#older").click()
    expect(page.locator("#transcript .ev")).to_have_count(200)
    assert page.locator("#transcript .ev").first.get_attribute("data-seq") == str(last - 199)

    # reopening reuses the aggregate: the log is not read again, and no event is fed twice
    page.goto(f"{console.url}/")
    page.get_by_role("link", name=sid).click()
    page.wait_for_selector("body[data-ready='1']", timeout=30000)
    state = page.evaluate(f"fetch('/api/s/{sid}/poll?after={last}').then(r => r.json())")
    assert state["reads"] == 1 and state["totals"]["fed"] == last
