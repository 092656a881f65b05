"""The console as people expect it, in Debian's chromium: a linkable request,
error pages, dark mode, a chart with axes, a live diagnosis, the recipe's prices, a searchable
list, and bookkeeping in words."""

from __future__ import annotations

import re
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from tests.stats.drive import Driver, reading_script, settings
from tests.stats.test_diagnosis_fakes import ROOMY

from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.values.events import CtxClose, CtxOpen, ModelSwitch, ResultFold, UserMsg
from nodwyn.values.model import Prices

from .conftest import Writer
from .served import Served, serve
from .test_browser import _open

pytestmark = pytest.mark.browser


def _luminance(css: str) -> float:
    r, g, b = (int(x) for x in re.findall(r"\d+", css)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def test_the_selected_request_is_in_the_address(store: Store, console: Served, page: Any) -> None:
    w = Writer(store.create())
    w.user("link me")
    seqs = [w.turn(1000 * (i + 1), 900 * i) for i in range(3)]
    _open(page, f"{console.url}/s/{w.id}")
    page.locator(f"#chart g.bar[data-seq='{seqs[1]}']").click()
    expect(page).to_have_url(re.compile(rf"/s/{w.id}\?request={seqs[1]}$"))
    link = page.url

    other = page.context.new_page()  # the link opened elsewhere shows the same request
    _open(other, link)
    expect(other.locator("#window-seq")).to_have_text(str(seqs[1]))
    assert other.locator("#window-section").is_visible()
    expect(other.locator("#window-verify")).not_to_have_text("replaying…")
    assert other.locator(f"#chart g.bar.selected[data-seq='{seqs[1]}']").count() == 1
    other.close()

    page.locator(f"#chart g.bar[data-seq='{seqs[2]}']").click()
    expect(page).to_have_url(re.compile(rf"\?request={seqs[2]}$"))
    page.go_back()  # the browser's back button returns to the previous request
    expect(page).to_have_url(re.compile(rf"\?request={seqs[1]}$"))
    expect(page.locator("#window-seq")).to_have_text(str(seqs[1]))
    page.go_back()
    expect(page).to_have_url(f"{console.url}/s/{w.id}")
    expect(page.locator("#window-section")).to_be_hidden()


def test_error_pages_are_pages(store: Store, console: Served, page: Any) -> None:
    w = Writer(store.create())
    w.turn(1000, 0)
    missing = page.goto(f"{console.url}/s/20990101T000000Z-deadbeef")
    assert missing is not None and missing.status == 404
    assert missing.headers["content-type"].startswith("text/html")
    expect(page.locator("h1")).to_contain_text("Not found")
    assert "no session" in page.locator("#error-message").inner_text()
    page.get_by_role("link", name="all sessions").click()
    page.wait_for_selector("body[data-ready='1']")

    nowhere = page.goto(f"{console.url}/no/such/page")
    assert nowhere is not None and nowhere.status == 404
    assert "there is no page at /no/such/page" in page.locator("#error-message").inner_text()
    assert not page.locator("body").inner_text().lstrip().startswith("{")

    # the page's scripts still get JSON, and show its message in the page
    api = page.evaluate("fetch('/api/s/20990101T000000Z-deadbeef/poll').then(r => r.json())")
    assert "no session" in api["error"]
    _open(page, f"{console.url}/s/{w.id}?request=1")  # seq 1 is no request
    expect(page.locator("#window-verify")).to_contain_text("is not an llm.req")


def test_dark_mode_follows_the_system(store: Store, console: Served, browser: Any) -> None:
    w = Writer(store.create())
    w.user("in the dark")
    w.turn(1000, 500)
    shades = {}
    for scheme in ("light", "dark"):
        context = browser.new_context(color_scheme=scheme, viewport={"width": 1280, "height": 900})
        page = context.new_page()
        _open(page, f"{console.url}/s/{w.id}")
        style = "el => [getComputedStyle(el).backgroundColor, getComputedStyle(el).color]"
        body_bg, body_fg = page.locator("body").evaluate(style)
        chart_bg, _ = page.locator("#chart").evaluate(style)
        event_bg, _ = page.locator("#transcript .ev").first.evaluate(style)
        page.goto(f"{console.url}/s/nope")
        error_bg, _ = page.locator("body").evaluate(style)
        shades[scheme] = [_luminance(c) for c in (body_bg, body_fg, chart_bg, event_bg, error_bg)]
        context.close()
    light, dark = shades["light"], shades["dark"]
    assert light[0] > 0.9 and light[1] < 0.2 and light[2] > 0.9 and light[3] > 0.9 and light[4] > 0.9
    assert dark[0] < 0.15 and dark[1] > 0.8 and dark[2] < 0.2 and dark[3] < 0.2 and dark[4] < 0.15


def test_the_chart_fills_its_panel_with_axis_ticks_and_a_time_axis(
    store: Store, console: Served, browser: Any
) -> None:
    w = Writer(store.create())
    w.user("a few requests over a few seconds")
    prompts = [1200, 5400, 9000, 12800]
    for i, prompt in enumerate(prompts):
        w.turn(prompt, prompt // 2)
        if i < len(prompts) - 1:
            time.sleep(1.05)  # the log's clock gives each request its own second
    context = browser.new_context(timezone_id="UTC", viewport={"width": 1280, "height": 900})
    page = context.new_page()
    _open(page, f"{console.url}/s/{w.id}")

    def fills() -> None:
        # measured in one go: a poll may redraw the chart between two separate reads
        inner, width, right = page.locator("#chart").evaluate(
            """el => {
              const hits = [...el.querySelectorAll('g.bar rect.hit')];
              const last = hits[hits.length - 1];
              return [el.clientWidth - 12, el.querySelector('svg').getBoundingClientRect().width,
                      +last.getAttribute('x') + +last.getAttribute('width')];
            }"""
        )
        assert abs(width - inner) <= 2, (width, inner)
        assert right > 0.9 * inner  # the bars use the width, not a corner of it

    fills()
    ticks = page.locator("#chart text.tick.y").all_text_contents()
    values = [float(t.replace("k", "e3").replace("M", "e6")) for t in ticks]
    assert values[0] == 0 and values == sorted(values) and len(values) >= 3 and values[-1] >= max(prompts)
    times = page.locator("#chart g.xtick").evaluate_all(
        "els => els.map(e => [e.dataset.t, e.querySelector('text').textContent])"
    )
    assert len(times) >= 3
    for t, label in times:
        assert label == t[11:19]  # the request's own clock time, HH:MM:SS
    moments = [datetime.fromisoformat(t.replace("Z", "+00:00")) for t, _ in times]
    assert moments == sorted(moments) and moments[-1] > moments[0]
    assert page.locator("#chart text.tick.date").first.text_content() == times[0][0][:10]

    page.set_viewport_size({"width": 800, "height": 900})  # a narrower window: the chart follows
    page.wait_for_function(
        "() => Math.abs(document.querySelector('#chart svg').getBoundingClientRect().width"
        " - (document.querySelector('#chart').clientWidth - 12)) <= 2"
    )
    fills()
    context.close()


def test_the_miss_diagnosis_updates_live(root: Path, page: Any) -> None:
    """A server miss after a resume (the provider's cache gone) is drawn and listed as a server
    miss as soon as its reply is logged, not as a prefix we moved."""
    store = Store(root, fsync=False)
    console = serve(root)
    try:
        with FakeServer(api="openai-chat", cache="single", script=reading_script(3)) as fake:
            port = int(fake.url.rsplit(":", 1)[1])
            models = {"r": settings(fake.url, "r", "fake-model", cache_key="off")}
            d = Driver(store, ROOMY, models, "r", session_key=None)
            d.user("Review the repository module by module.")
            for _ in range(3):
                d.request()
            page.goto(f"{console.url}/s/{d.log.id}")
            page.wait_for_selector("body[data-diagnosed]", timeout=20000)
            before = int(page.locator("body").get_attribute("data-diagnosed") or 0)
        # the provider restarted: its cache is empty; the agent resumes the session
        with FakeServer(api="openai-chat", cache="single", script=reading_script(2), port=port):
            resume = d.resume()
            missed, _ = d.request()
            page.wait_for_function(
                f"() => +document.body.dataset.diagnosed >= {d.log.last_seq}", timeout=20000
            )
            assert d.log.last_seq > before
            li = page.locator(f"#diagnosis li[data-seq='{missed}']")
            expect(li).to_have_class(re.compile("server-miss"))
            assert f"after the resume at seq {resume.seq}" in li.inner_text()
            bar = page.locator(f"#chart g.bar[data-seq='{missed}']")
            assert bar.locator("path.miss").count() == 1 and bar.locator("path.suspected").count() == 0
            assert bar.locator("text.moved").count() == 0  # not "moved by us"
            assert "1 server miss" in page.locator("#diagnosis-summary").inner_text()
            # what the live page shows is what a full replay pass says
            full = page.evaluate(f"fetch('/api/s/{d.log.id}/diagnosis').then(r => r.json())")
            verdict = next(x for x in full["requests"] if x["seq"] == missed)
            assert verdict["kind"] == "server miss"
    finally:
        console.stop()


def test_prices_come_from_the_sessions_recipe(root: Path, store: Store, page: Any) -> None:
    config = {"glm": Prices(input=100.0, output=200.0)}  # config.toml today: much dearer
    console = serve(root, config)
    try:
        recorded = Writer(store.create(), prices={"glm": Prices(input=1.0, output=2.0)})
        recorded.user("priced when it ran")
        recorded.turn(1_000_000, 0)  # 1M prompt tokens and 40 output tokens
        older = Writer(store.create())  # a log from before recipes recorded prices
        older.user("no prices recorded")
        older.turn(1_000_000, 0)
        _open(page, f"{console.url}/s/{recorded.id}")
        cost = page.locator('#totals tr[data-row="cost"]')
        assert cost.locator("td.value").inner_text() == f"${1.0 + 40 * 2.0 / 1e6:.4f}"
        assert cost.locator("td.muted").inner_text() == "at the prices recorded in the session's recipe"
        _open(page, f"{console.url}/s/{older.id}")
        assert cost.locator("td.value").inner_text() == f"${100.0 + 40 * 200.0 / 1e6:.4f}"
        assert "config.toml" in cost.locator("td.muted").inner_text()
    finally:
        console.stop()


def test_the_list_has_search_model_cost_and_date(store: Store, console: Served, browser: Any) -> None:
    priced = Writer(store.create(), prices={"glm": Prices(input=1.0, output=2.0)})
    priced.user("Refactor the config loader")
    priced.turn(1_000_000, 0)
    unpriced = Writer(store.create(), model="qwen")
    unpriced.user("Explain the window fold")
    unpriced.turn(2000, 0, model="qwen")
    unpriced.turn(3000, 2000, model="qwen")
    context = browser.new_context(timezone_id="UTC", viewport={"width": 1280, "height": 900})
    page = context.new_page()
    _open(page, f"{console.url}/")
    cells = {
        row.get_attribute("data-id"): {
            col: row.locator(f"td[data-col={col}]").inner_text()
            for col in ("date", "title", "model", "requests", "cost", "rate")
        }
        for row in page.locator("#sessions tbody tr").all()
    }
    start = store.info(priced.id).start
    assert start is not None
    assert cells[priced.id] == {
        "date": start[:16].replace("T", " "),
        "title": "Refactor the config loader",
        "model": "glm",
        "requests": "1",
        "cost": f"${1.0 + 40 * 2.0 / 1e6:.4f}",
        "rate": "0%",
    }
    assert cells[unpriced.id]["model"] == "qwen" and cells[unpriced.id]["cost"] == "unknown"
    assert cells[unpriced.id]["requests"] == "2"

    search = page.locator("#search")
    search.fill("window")
    expect(page.locator("#sessions tbody tr:visible")).to_have_count(1)
    assert page.locator("#sessions tbody tr:visible").get_attribute("data-id") == unpriced.id
    expect(page).to_have_url(f"{console.url}/?q=window")
    search.fill("GLM")  # the model, whatever the case
    expect(page.locator("#sessions tbody tr:visible")).to_have_count(1)
    assert page.locator("#sessions tbody tr:visible").get_attribute("data-id") == priced.id
    search.fill("nothing like this")
    expect(page.locator("#status")).to_have_text("no session matches")
    _open(page, f"{console.url}/?q=refactor")  # a search is a link too
    expect(page.locator("#sessions tbody tr:visible")).to_have_count(1)
    assert page.locator("#search").input_value() == "refactor"
    context.close()


def test_bookkeeping_is_worded_for_people(store: Store, console: Served, page: Any) -> None:
    w = Writer(store.create())
    w.user("read the file")
    seq = w.req()
    w.resp(seq, "", call=True, prompt_tokens=2000, cached_tokens=0, output_tokens=9)
    result = w.tool("a long file\n" * 40)
    w.log.append(ResultFold(target=result, text="[folded: read, not needed]"))
    w.log.append(CtxOpen(id="sub-9", kind="sub", offered_tools=("fs-read", "fs-grep")))
    w.log.append(UserMsg(text="find the tests"), "sub-9")
    w.log.append(CtxClose(id="sub-9", result="tests live in tests/"))
    w.log.append(ModelSwitch(model="qwen"))
    w.log.append(CtxOpen(id="compact-14", kind="narrow", system="NOTE", lasting=True))
    w.log.append(UserMsg(text="continue"), "compact-14")
    _open(page, f"{console.url}/s/{w.id}")
    transcript = page.locator("#transcript").inner_text()
    for words in (
        "The conversation was compacted: later requests start from the note the model wrote",
        "A sub-agent started (sub-9) with the tools fs-read, fs-grep.",
        "The side conversation sub-9 ended: its answer follows.",
        "tests live in tests/",
        f"The tool result at #{result} was replaced by a short note to save room.",
        "Switched to the model qwen.",
    ):
        assert words in transcript, words
    for internal in (
        "lasting",
        "ctx.open",
        "ctx.close",
        "result.fold",
        "model.switch",
        "llm.req",
        "llm.resp",
        "={",
    ):
        assert internal not in transcript, internal
    heads = page.locator("#transcript .ev .head").all_inner_texts()
    assert any(" · person" in h for h in heads) and any(" · reply" in h for h in heads)
    assert any(" · context opened" in h for h in heads)
