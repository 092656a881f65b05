"""A request's window in the browser: exact replay and its verification result."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from nodwyn.log import Store

from .conftest import Served, Writer
from .test_browser import _open

pytestmark = [pytest.mark.browser, pytest.mark.forges_digests]  # the Writer records placeholder digests


def test_a_request_window_shows_its_verification(store: Store, console: Served, page: Any) -> None:
    w = Writer(store.create())
    w.user("a request whose digest is not the real one")
    w.turn(1000, 0)
    _open(page, f"{console.url}/s/{w.id}")
    page.locator("#chart g.bar").first.click()
    verify = page.locator("#window-verify")
    expect(verify).not_to_have_text("replaying…", timeout=10000)
    # this hand-written llm.req records a placeholder digest, so exact replay must refuse it
    assert verify.inner_text().startswith("not verified")
    assert page.locator("#window-diagnosis").get_attribute("data-kind") == "unverified"
    words = page.locator("#window-diagnosis").inner_text()
    assert words.startswith("request ") and "digest" in words  # worded in the page from unrebuilt + error
