"""How fast the console's session page is ready on a 100 MB log.

Writes a session of about ``--mb`` megabytes into a temporary directory through
``nodwyn.testing.SessionBuilder`` (user turns, requests with real digests, replies with thinking,
64 KB tool results, the window's trims), serves the console from this
process on 127.0.0.1 and opens the session page in Debian's chromium with Playwright, timing from
navigation to the page's ready mark (totals, chart and the transcript's last page shown). The
baseline is the same page on a small session in the same run; figures are printed as ratios
against it. ``--out`` writes the table to a markdown file.

    .venv/bin/python bench/console_large_log.py --mb 100 --out docs/bench-console.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.console.served import CHROMIUM, CHROMIUM_ARGS, serve  # noqa: E402

from nodwyn.log import SessionLog, Store  # noqa: E402
from nodwyn.testing import SessionBuilder  # noqa: E402
from nodwyn.values.content import Origin, ToolCall  # noqa: E402
from nodwyn.values.recipe import Recipe, WindowLimits  # noqa: E402
from nodwyn.values.request import ToolSpec, Usage  # noqa: E402

RESULT_BYTES = 64 * 1024


# the bench's window: a million-token model's, so requests grow to about 1.4 MB before a trim
LIMITS = WindowLimits(
    high_water=600000, low_water=300000, max_result_tokens=30000, output_reserve=8000, ceiling=900000
)


def _recipe(limits: WindowLimits) -> Recipe:
    tools = (ToolSpec(name="fs-read", description="read a file", parameters={"type": "object"}),)
    return Recipe(
        version=19, system="You are a careful agent.", tools=tools, limits=limits, context_size=1000000
    )


def _result_text(i: int, size: int = RESULT_BYTES) -> str:
    line = f"{i:06d}: def handler_{i}(request):  # reads the request and answers it with a plain body\n"
    return (line * (size // len(line) + 1))[:size]


def write_session(
    log: SessionLog, target_bytes: int, limits: WindowLimits = LIMITS, result_bytes: int = RESULT_BYTES
) -> int:
    """Append a long coding session of about ``target_bytes`` to ``log`` through the recording path
    the agent uses (every request's digest real; the window trims as it would); returns its
    request count. ``limits`` (the window's) and ``result_bytes`` (each tool result's size) are
    the bench's unless asked: writing the session, and replaying it, cost the requests' count times
    their size (every request holds every earlier message), so a test of what the console reads
    asks for a smaller window and fewer, larger results (ADR 0471)."""
    origin = Origin(model="glm-5.3-flash", server="openrouter")
    s = SessionBuilder(_recipe(limits), log=log, model="glm")
    written = 0
    prompt = 4000
    requests = 0
    i = 0
    while written < target_bytes:
        if i % 40 == 0:
            s.user(f"Task {i // 40 + 1}: make handler_{i} answer with JSON")
        req = s.request(origin=origin)
        trim = bool(req.data["trim"])
        requests += 1
        previous = prompt
        prompt = 30000 if trim else prompt + 1000
        # the cache serves the predecessor's prompt in 128-token blocks, but misses now and then
        cached = 0 if trim or i % 53 == 7 else previous // 128 * 128
        call = ToolCall(id=f"c{i}", name="fs-read", arguments=f'{{"path": "src/handler_{i}.py"}}')
        s.reply(
            req,
            "" if i % 5 else f"Reading handler_{i} next.",
            thinking=f"handler_{i} needs a JSON body; read it first.",
            calls=(call,),
            usage=Usage(prompt_tokens=prompt, cached_tokens=max(cached, 0), output_tokens=60),
            model=None,
        )
        s.result(call, _result_text(i, result_bytes))
        written += result_bytes + 1500
        i += 1
    return requests


def time_ready(page: Any, url: str) -> float:
    """Seconds from navigation to the page's ready mark."""
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']", timeout=60000)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100.0, help="size of the large log in MB (default 100)")
    ap.add_argument("--repeat", type=int, default=5, help="warm page loads to time (default 5)")
    ap.add_argument("--out", type=Path, help="write the results as markdown here")
    args = ap.parse_args(argv)
    from playwright.sync_api import expect, sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp), fsync=False)
        t0 = time.perf_counter()
        with store.create() as big:
            requests = write_session(big, int(args.mb * 1e6))
            big_id = big.id
        write_s = time.perf_counter() - t0
        with store.create() as small:
            write_session(small, 200_000)
            small_id = small.id
        size = store.info(big_id).size
        served = serve(Path(tmp))
        url = served.url
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page()
                time_ready(page, f"{url}/")  # warm the browser up: its first page costs it alone
                base_cold = time_ready(page, f"{url}/s/{small_id}")
                base = statistics.median(time_ready(page, f"{url}/s/{small_id}") for _ in range(args.repeat))
                cold = time_ready(page, f"{url}/s/{big_id}")
                warm = [time_ready(page, f"{url}/s/{big_id}") for _ in range(args.repeat)]
                shown = page.locator("#transcript .ev").count()
                bars = page.locator("#chart g.bar").count()
                t1 = time.perf_counter()
                page.locator("#older").click()
                expect(page.locator("#transcript .ev")).to_have_count(shown + 100)
                older = time.perf_counter() - t1
                browser.close()
        finally:
            served.stop()
    warm_med = statistics.median(warm)
    rows = [
        ("small session, first open (baseline)", base_cold, base_cold / base),
        ("small session, reopened (baseline)", base, 1.0),
        (f"{size / 1e6:.0f} MB session, first open (aggregates the whole log)", cold, cold / base),
        (f"{size / 1e6:.0f} MB session, reopened (median of {args.repeat})", warm_med, warm_med / base),
        (f"100 older transcript events on the {size / 1e6:.0f} MB session", older, older / base),
    ]
    load = os.getloadavg()[0]
    lines = [
        f"machine load average (1 min) at the end of the run: {load:.1f} on {os.cpu_count()} cores",
        "",
        f"log: {size:,} bytes, {requests:,} requests, written in {write_s:.1f} s; "
        f"page shows {shown} transcript events and {bars} chart bars",
        "",
        "| page | seconds | × baseline |",
        "|---|---:|---:|",
        *[f"| {name} | {sec:.3f} | {ratio:.1f} |" for name, sec, ratio in rows],
    ]
    print("\n".join(lines))
    if args.out:
        args.out.write_text(_report(lines, args), encoding="utf-8")
    ok = cold < 2.0 and warm_med < 2.0
    print("ready under 2 s" if ok else "NOT ready under 2 s")
    return 0 if ok else 1


def _report(lines: list[str], args: argparse.Namespace) -> str:
    return "\n".join(
        [
            "# Console on a large log",
            "",
            "How long the console's session page takes to be ready (totals, the per-request chart and",
            "the transcript's last page shown) on a 100 MB session log, in Debian's chromium through",
            "Playwright, with the console served from the same process on 127.0.0.1. Machine: 2 cores.",
            "",
            "Command:",
            "",
            "    .venv/bin/python bench/console_large_log.py "
            f"--mb {args.mb:g} --repeat {args.repeat} --out docs/bench-console.md",
            "",
            *lines,
            "",
            "The first open of a session reads and aggregates every event once (ADR 0092); the",
            "aggregate is kept, so a reopen or a poll reads only new events. The transcript is read a",
            "page of 100 events at a time from the log's index, never the whole log.",
            "",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
