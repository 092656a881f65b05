"""A request's window in the browser: exact replay and its verification result."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from nodwyn.log import Store

from .conftest import Writer
from .served import Served
from .test_browser import _open

pytestmark = pytest.mark.browser


def _verification(page: Any, url: str) -> Any:
    _open(page, url)
    page.locator("#chart g.bar").first.click()
    verify = page.locator("#window-verify")
    expect(verify).not_to_have_text("replaying…", timeout=10000)
    return verify


def test_a_request_window_shows_its_verification(store: Store, console: Served, page: Any) -> None:
    w = Writer(store.create())
    w.user("a request recorded as the agent records it")
    seq = w.turn(1000, 0)
    digest = w.session.events[seq - 1].data["digest"]
    verify = _verification(page, f"{console.url}/s/{w.id}")
    assert verify.inner_text().startswith("verified") and digest in verify.inner_text()
    assert page.locator("#window-diagnosis").get_attribute("data-kind") == "first"


@pytest.mark.forges_digests  # the recorded digest is overwritten on purpose
def test_a_request_whose_digest_does_not_match_is_not_verified(
    store: Store, console: Served, page: Any
) -> None:
    w = Writer(store.create())
    w.user("a request whose recorded digest is then overwritten")
    seq = w.turn(1000, 0)
    digest = w.session.events[seq - 1].data["digest"]
    w.log.close()
    path = store.sessions / w.id / "log.jsonl"
    path.write_bytes(path.read_bytes().replace(digest.encode(), b"sha256:" + b"0" * 64))  # same length
    verify = _verification(page, f"{console.url}/s/{w.id}")
    assert verify.inner_text().startswith("not verified")
    assert page.locator("#window-diagnosis").get_attribute("data-kind") == "unverified"
    words = page.locator("#window-diagnosis").inner_text()
    assert words.startswith("request ") and "digest" in words  # worded in the page from unrebuilt + error
