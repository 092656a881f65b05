"""A 100 MB log stays responsive: the page reads a page of the transcript, not the log.

Timing is measured in bench/console_large_log.py (docs/bench-console.md); this test checks what
makes it fast: the page shows one page of events, transfers a bounded number of bytes, and
loads older events on demand.
"""

from __future__ import annotations

from typing import Any

import pytest
from bench.console_large_log import write_session
from playwright.sync_api import expect

from nodwyn.log import Store

from .served import Served

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_100_mb_log_opens_a_page_at_a_time(store: Store, console: Served, page: Any) -> None:
    with store.create() as log:
        requests = write_session(log, 100_000_000)
        sid = log.id
        last = log.last_seq
    assert store.info(sid).size >= 100_000_000

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
