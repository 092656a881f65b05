"""Run every recorded provider exchange (tests/data/traffic) and write the table of cases tried /
passed per dialect to docs/recorded-traffic.md. Exit status 1 when a case failed.

A case is one test of tests/dialects/test_recorded_traffic.py: a recorded reply decoded and
compared with the official SDK's reading of the same bytes; a recorded SSE reply served over
127.0.0.1 to HttpBackend; a recorded follow-up request compared with nodwyn's encoding of the same
conversation. The dialect is the cassette's folder (``api/family``).

    .venv/bin/python bench/recorded_traffic.py --out docs/recorded-traffic.md
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = "tests/dialects/test_recorded_traffic.py"
KINDS = {
    "test_a_recorded_reply_decodes_as_the_official_sdk_reads_it": "replies",
    "test_a_recorded_stream_served_over_http_gives_the_same_reply": "streams over HTTP",
    "test_a_recorded_follow_up_is_what_nodwyn_would_send": "follow-up requests",
    "test_the_ollama_docs_follow_up_is_what_nodwyn_would_send": "follow-up requests",
}
Case = tuple[str, str, bool, str, list[tuple[str, str]]]


def run_suite(extra: list[str]) -> list[Case]:
    """(kind, dialect, passed, what the real client altered, the equivalent differences of shape
    with their references) for every case the suite ran."""
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "results.xml"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            SUITE,
            f"--junitxml={xml}",
            *extra,
        ]
        subprocess.run(cmd, cwd=ROOT, check=False)
        if not xml.exists():
            raise SystemExit(f"recorded_traffic: pytest wrote no results to {xml}; did it start?")
        cases = []
        for tc in ET.parse(xml).getroot().iter("testcase"):
            name = tc.get("name", "")
            test, _, param = name.partition("[")
            if test not in KINDS:
                continue
            dialect = "/".join(param.rstrip("]").split("/")[:2])
            failed = any(child.tag in {"failure", "error", "skipped"} for child in tc)
            props = {p.get("name"): p.get("value", "") for p in tc.iter("property")}
            altered = props.get("altered", "")
            equivalent = [(d, ref) for d, ref in json.loads(props.get("equivalent") or "[]")]
            cases.append(
                (
                    KINDS[test],
                    dialect,
                    not failed,
                    f"`{param.rstrip(']')}`: {altered}" if altered else "",
                    equivalent,
                )
            )
        return cases


def table(cases: list[Case]) -> str:
    tried = Counter((k, d) for k, d, _, _, _ in cases)
    passed = Counter((k, d) for k, d, ok, _, _ in cases if ok)
    dialects = sorted({d for _, d, _, _, _ in cases})
    kinds = list(dict.fromkeys(KINDS.values()))
    head = "| dialect (api/family) | " + " | ".join(f"{k}: tried / passed" for k in kinds) + " |"
    rows = [head, "|---|" + "---:|" * len(kinds)]
    for d in dialects:
        cells = [f"{tried[(k, d)]} / {passed[(k, d)]}" for k in kinds]
        rows.append(f"| {d} | " + " | ".join(cells) + " |")
    totals = [
        f"**{sum(v for (k2, _), v in tried.items() if k2 == k)} / "
        f"{sum(v for (k2, _), v in passed.items() if k2 == k)}**"
        for k in kinds
    ]
    rows.append("| **all** | " + " | ".join(totals) + " |")
    return "\n".join(rows)


def equivalents(cases: list[Case]) -> list[str]:
    """The table of follow-up differences from the real clients that the API reference makes
    equivalent: the difference, how many cases of which dialects show it, the reference."""
    seen: dict[tuple[str, str], Counter[str]] = {}
    for _, dialect, _, _, equivalent in cases:
        for difference, reference in equivalent:
            seen.setdefault((difference, reference), Counter())[dialect] += 1
    rows = [
        "| difference from the client | cases (dialect) | why it is equivalent (reference) |",
        "|---|---|---|",
    ]
    for (difference, reference), where in sorted(seen.items()):
        cell = ", ".join(f"{n} {d}" for d, n in sorted(where.items()))
        rows.append(f"| {difference} | {cell} | {reference} |")
    return rows if seen else ["none"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "recorded-traffic.md")
    args, extra = ap.parse_known_args()
    cases = run_suite(extra)
    failed = sum(1 for _, _, ok, _, _ in cases if not ok)
    altered = sorted({a for _, _, _, a, _ in cases if a})
    cassettes = len(list((ROOT / "tests" / "data" / "traffic").rglob("*.yaml")))
    lines = [
        "# Recorded provider traffic: cases tried / passed",
        "",
        f"Written by `.venv/bin/python bench/recorded_traffic.py` on {datetime.now(UTC):%Y-%m-%d}: every",
        f"interaction of the {cassettes} cassettes in `tests/data/traffic/` (real exchanges recorded by",
        "pydantic-ai; see SOURCES.md there) that went to an API nodwyn speaks, run as",
        f"`{SUITE}`. {len(cases)} cases, {failed} failed.",
        "",
        table(cases),
        "",
        "- **replies**: the recorded reply decoded by nodwyn equals what the official SDK (`openai`,",
        "  `anthropic`) builds from the same bytes served to it over HTTP, with its own accumulator:",
        "  text, thinking, tool calls (id, name, arguments), the blocks that go back (reasoning_details,",
        "  Responses reasoning items, Anthropic thinking/redacted_thinking) byte for byte, usage (prompt,",
        "  cached, cache writes, output) and the Responses phase. A reply the SDK refuses must be refused.",
        "- **streams over HTTP**: the recorded SSE body served on 127.0.0.1 to `HttpBackend` gives the",
        "  same reply (or the same one-line error).",
        "- **follow-up requests**: the reply before it, decoded and encoded back in the same",
        "  conversation, carries the reasoning/thinking blocks, tool-call ids, arguments and text the real",
        "  client sent back, except where the real client itself sent back something other than what the",
        "  server gave (then what the server gave). Where the recording differs so:",
    ]
    lines += [f"  - {a}" for a in altered] or ["  - none"]
    lines += [
        "",
        "## Follow-up differences of shape that the API reference makes equivalent",
        "",
        "Beyond the blocks, ids, arguments and text above, nodwyn's follow-up differs from what the",
        "client sent in these fields only; the test fails on any other difference, on an empty",
        "`content` list, on an assistant message of a reply with a `phase` sent without it, and on a",
        "Responses reasoning item (`store: false`) sent without its `id` and `encrypted_content`",
        "(issue 20, item 6; ADR 0311). Ollama's native API has no cassette: its documented",
        "tool-calling follow-up stands in for the client (`ollama/docs`).",
        "",
        *equivalents(cases),
    ]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(table(cases))
    print(f"{len(cases)} cases, {failed} failed; written to {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
