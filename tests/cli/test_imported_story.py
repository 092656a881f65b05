"""An imported session keeps its own story (issue 26, item 8; ADR 0431): dated at its source's first
event, titled with the first prompt the person typed (not Claude Code's local-command caveat), and
``stats`` beside ``whatif``'s as-sent row related exactly as docs/imports.md says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .test_run import nodwyn

DATA = Path(__file__).resolve().parents[1] / "data" / "imports" / "claude-code"
JULY = DATA / "12a546d1-83a7-49a6-abba-5400db340b43.jsonl"  # Claude Code 1.0.56, July 2025 (SOURCES.md)


def _json(env: dict[str, str], *args: str) -> Any:
    done = nodwyn(env, *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _replies(path: Path) -> list[dict[str, int]]:
    """Each reply's usage as the file records it: the last line of each message.id."""
    usage: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines():
        d = json.loads(line)
        if d.get("type") == "assistant" and not d.get("isSidechain"):
            usage[d["message"]["id"]] = d["message"]["usage"]
    return list(usage.values())


def test_an_import_is_dated_and_titled_by_its_source(env: dict[str, str]) -> None:
    lines = [json.loads(x) for x in JULY.read_text().splitlines()]
    assert lines[0]["isMeta"] and lines[0]["message"]["content"].startswith("Caveat: The messages below")
    assert nodwyn(env, "import", str(JULY)).returncode == 0
    (row,) = [json.loads(x) for x in nodwyn(env, "sessions", "--json").stdout.splitlines()]
    assert row["id"].startswith("20250720T001806Z-")
    assert row["start"] == "2025-07-20T00:18:06.993000Z"  # the file's first line, not the import
    assert row["last"].startswith("2025-07-20T18:")
    assert row["first_message"].startswith("We've just done a big refactoring (Phase 2")
    listed = nodwyn(env, "sessions").stdout
    assert "2025-07-20 00:18" in listed and "Caveat" not in listed


def test_stats_and_whatif_as_sent_measure_different_things_as_the_doc_says(env: dict[str, str]) -> None:
    assert nodwyn(env, "import", str(JULY)).returncode == 0
    totals = _json(env, "stats", "latest", "--json")["totals"]["all"]
    row = next(p for p in _json(env, "whatif", "latest", "--json")["policies"] if p["policy"] == "as-sent")
    replies = _replies(JULY)
    # stats: the provider's own counts, summed; a cache write is uncached prefill
    assert totals["replies"] == row["requests"] == len(replies) == 36
    assert totals["cached_tokens"] == sum(u["cache_read_input_tokens"] for u in replies) == 1_167_066
    uncached = sum(u["input_tokens"] + u["cache_creation_input_tokens"] for u in replies)
    assert totals["uncached_tokens"] == uncached == 29_332
    # whatif: canonical bytes / 3 of what the file holds, through a one-slot prefix cache; this
    # session only appends, so what it sent is the append-only minimum exactly
    assert row["uncached_tokens"] == row["minimum_tokens"] == 26_468
    stream = row["uncached_tokens"] / (1 - row["cached_share"])
    # the file holds neither Claude Code's system prompt nor its tools: every request the provider
    # counted is larger than the modelled one by about that much (13-20 thousand tokens)
    missing = (totals["prompt_tokens"] - stream) / len(replies)
    assert 13_000 < missing < 20_000, missing
    first = replies[0]  # the first request alone was already larger than that
    assert (
        sum(first[k] for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
        > 13_000
    )
