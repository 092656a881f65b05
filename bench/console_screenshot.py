"""Take docs/console.png: a session page of the console in Debian's chromium (Playwright).

The session is driven the way the agent drives one (a live window, HttpBackend, the real log)
against fake providers on 127.0.0.1: an OpenRouter-like server whose replicas have caches of their
own (some requests land on a replica without our prefix), a tight window that trims, a hygiene
fold, a second task and a switch to another model. The page is then opened with the window of the
first server miss shown.

    .venv/bin/python bench/console_screenshot.py --out docs/console.png   # --dark: as a dark system shows it
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.console.served import CHROMIUM, CHROMIUM_ARGS, serve  # noqa: E402
from tests.stats.drive import Driver, settings  # noqa: E402

from nodwyn.fakes import FakeServer  # noqa: E402
from nodwyn.log import Store  # noqa: E402
from nodwyn.values.model import Prices  # noqa: E402
from nodwyn.values.recipe import WindowLimits  # noqa: E402

LIMITS = WindowLimits(
    high_water=14000, low_water=7000, max_result_tokens=4000, output_reserve=1000, ceiling=16000
)
FILES = ["cli.py", "config.py", "log.py", "window.py", "trim.py", "render.py", "dialects.py", "http.py"]


def script(n: int, final: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for i in range(n):
        name = FILES[i % len(FILES)]
        items.append(
            {
                "thinking": f"{name} is next; it should say where the request is built.",
                "text": "" if i % 3 else f"Reading {name} to see how it fits.",
                "calls": [{"name": "fs-read", "arguments": {"path": f"src/nodwyn/{name}"}}],
            }
        )
    items.append({"thinking": "I have read enough to answer.", "text": final})
    return items


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="take the console screenshot")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "console.png")
    ap.add_argument("--full", action="store_true", help="the whole page, not the first screen")
    ap.add_argument("--section", help="only this section of the page (an element id)")
    ap.add_argument("--pace", type=float, default=1.0, help="seconds between requests (the time axis)")
    ap.add_argument("--dark", action="store_true", help="the page as a system in dark mode shows it")
    ap.add_argument("--verbose", action="store_true", help="print the session's diagnosis")
    args = ap.parse_args(argv)
    from playwright.sync_api import expect, sync_playwright

    answer1 = "The request is rebuilt from the log by the window, then encoded by the dialect and sent."
    answer2 = "Trimming elides the oldest tool results first, down to the low water mark."
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp), fsync=False)
        items = script(9, answer1) + script(6, answer2)
        with FakeServer(
            api="openai-chat",
            family="openrouter",
            cache="replicas",
            replicas=3,
            seed=3,
            script=items,
            models=("z-ai/glm-5.3-flash", "qwen/qwen3.6-coder"),
        ) as fake:
            models = {
                "glm": settings(fake.url, "glm", "z-ai/glm-5.3-flash", family="openrouter", cache_key="off"),
                "qwen": settings(
                    fake.url, "qwen", "qwen/qwen3.6-coder", family="openrouter", cache_key="off"
                ),
            }
            prices = {  # US dollars per million tokens, recorded in the recipe as `nodwyn run` does
                "glm": Prices(input=0.4, output=1.6, cached_input=0.08),
                "qwen": Prices(input=0.3, output=1.2, cached_input=0.06),
            }
            d = Driver(store, LIMITS, models, "glm", result_bytes=5000, session_key=None, prices=prices)
            d.user("How does nodwyn build and send a request? Read the code and explain.")
            for _ in range(5):
                d.request()
                time.sleep(args.pace)
            d.fold(d.results[1], "[folded: config.py was not relevant]")
            for _ in range(5):
                d.request()
                time.sleep(args.pace)
            d.user("And how does trimming work?")
            d.switch("qwen")
            for _ in range(7):
                d.request()
                time.sleep(args.pace)
            sid = d.log.id
            if args.verbose:
                from nodwyn.cli.stats import describe
                from nodwyn.replay.diagnose import diagnose_session
                from nodwyn.stats.totals import Aggregator

                agg = Aggregator()
                agg.feed_all(d.log.read())
                for diag in diagnose_session(d.log, agg.rows):
                    print(diag.seq, diag.kind, describe(diag))
            d.log.close()
        served = serve(Path(tmp))  # no config prices: the session's recipe records them
        url = served.url
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(
                    viewport={"width": 1280, "height": 1500},
                    device_scale_factor=1,
                    color_scheme="dark" if args.dark else "light",
                )
                page.goto(f"{url}/s/{sid}")
                page.wait_for_selector("body[data-ready='1']")
                page.locator("#breakdowns summary").click()
                miss = page.locator("#chart g.bar:has(path.miss)").first
                (miss if miss.count() else page.locator("#chart g.bar").nth(3)).click()
                expect(page.locator("#window-verify")).not_to_have_text("replaying…")
                page.mouse.move(1200, 10)
                page.evaluate("window.scrollTo(0, 0)")
                if args.section:
                    page.locator(f"#{args.section}").screenshot(path=str(args.out))
                else:
                    page.screenshot(path=str(args.out), full_page=args.full)
                browser.close()
        finally:
            served.stop()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
