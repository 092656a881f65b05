"""Redaction speed on what sessions append: prose, source code, a tool's env dump, reasoning blobs.

For each payload, the median time of ``redact(payload)`` is compared with the same run's baseline,
``orjson.dumps(payload)`` (what every append does anyway). ``--old FILE`` also times another
``redact.py`` (e.g. an earlier release's, from ``git show REV:src/nodwyn/log/redact.py``), so a
change to the rules can be reported before/after on the same machine and load. Both are given
the same held values (each through its own ``Known``), so the cost of looking for them is in both.

    git show 12cbafd:src/nodwyn/log/redact.py > /tmp/redact_old.py
    .venv/bin/python bench/redact.py --old /tmp/redact_old.py
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import random
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from nodwyn.log import Holdback
from nodwyn.log.redact import Known, redact, redact_text

ROOT = Path(__file__).resolve().parents[1]


def payloads() -> dict[str, dict[str, Any]]:
    rng = random.Random(7)
    words = "the quick brown fox jumps over the lazy dog while the build runs its tests "
    code = (ROOT / "src/nodwyn/agent/loop.py").read_text()
    env = "\n".join(f"VAR_{i}=value-{i}" for i in range(60)) + "\nHOME=/root\nPATH=/usr/bin:/bin\n"
    manifest = "".join(
        f"---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: app-{i}\n  labels: {{tier: web%2Fapi}}\n"
        f"data:\n  token: {base64.b64encode(rng.randbytes(30)).decode()}\n"
        for i in range(12)
    )
    return {
        "prose 500 B": {"text": (words * 10)[:500], "i": 1, "call_id": "call_00000001"},
        "code 4 KB": {"text": code[:4096]},
        "code 64 KB": {"text": (code * 8)[:65536]},
        "env dump 1 KB": {"text": env},
        "k8s manifest 2 KB": {"text": manifest},
        "reasoning blobs 10 x 16 KB": {
            "reasoning_details": [
                {
                    "type": "reasoning.encrypted",
                    "data": base64.urlsafe_b64encode(rng.randbytes(16384)).decode(),
                }
                for _ in range(10)
            ]
        },
    }


def timed(fn: Callable[[], object], runs: int) -> float:
    fn()
    samples = []
    for _ in range(runs):
        n = 0
        start = time.perf_counter()
        while True:
            fn()
            n += 1
            elapsed = time.perf_counter() - start
            if elapsed > 0.05:
                break
        samples.append(elapsed / n)
    return statistics.median(samples)


def interleaved(new: Callable[[], object], old: Callable[[], object], n: int) -> tuple[float, float]:
    """The fastest of ``n`` calls of each, made alternately (both see the same load)."""
    best = [float("inf"), float("inf")]
    for _ in range(n):
        for i, fn in enumerate((new, old)):
            start = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - start)
    return best[0], best[1]


def load_old(path: Path, values: list[str]) -> Callable[[Any], Any]:
    """The other ``redact``, called with the same held values made by its own ``Known``."""
    spec = importlib.util.spec_from_file_location("redact_old", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["redact_old"] = module
    spec.loader.exec_module(module)
    held = module.Known.of(values)

    def old(payload: Any) -> Any:
        return module.redact(payload, held)

    return old


def stream(text: str, known: Known) -> str:
    """``text`` let out through a Holdback in 4-character pieces, as a streamed reply is."""
    held = Holdback(known)
    out = [held.feed(text[i : i + 4]) for i in range(0, len(text), 4)]
    return "".join(out) + held.flush()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=7, help="samples per case; the median is reported")
    parser.add_argument("--old", type=Path, default=None, help="another redact.py to time beside this one")
    parser.add_argument(
        "--interleave",
        type=int,
        default=0,
        metavar="N",
        help="with --old: also time new and old alternately N times each and compare the fastest of "
        "each (a shared machine's load moves a median by 2-3x; the fastest moves least)",
    )
    parser.add_argument(
        "--stream",
        action="store_true",
        help="also time a reply streamed through log.Holdback in 4-character pieces (what the screen "
        "does, ADR 0430) against one redaction of the whole text",
    )
    args = parser.parse_args()
    values = ["kc-" + "9f8e7d6c5b4a" * 3, "corpTok9/Xq2+Lm7Zv4Rw8Ps"]  # a keychain value, one with / and +
    old = load_old(args.old, values) if args.old else None
    known = Known.of(values)
    head = "| payload | orjson.dumps (baseline) | redact | vs baseline |"
    rule = "|---|---:|---:|---:|"
    if old:
        head += " old redact | new vs old |"
        rule += "---:|---:|"
    print(head)
    print(rule)
    for name, payload in payloads().items():
        base = timed(partial(orjson.dumps, payload), args.runs)
        new = timed(partial(redact, payload, known), args.runs)
        row = f"| {name} | {base * 1e6:,.1f} µs | {new * 1e6:,.1f} µs | {new / base:.1f}x |"
        if old:
            was = timed(partial(old, payload), args.runs)
            row += f" {was * 1e6:,.1f} µs | {new / was:.2f}x |"
        print(row)
    if args.stream:
        print()
        print("| text | redact whole (baseline) | streamed in 4-char pieces | vs baseline | pieces |")
        print("|---|---:|---:|---:|---:|")
        for name, payload in payloads().items():
            text = payload.get("text")
            if not isinstance(text, str):
                continue
            whole = timed(partial(redact_text, text, known), args.runs)
            streamed = timed(partial(stream, text, known), args.runs)
            print(
                f"| {name} | {whole * 1e6:,.1f} µs | {streamed * 1e6:,.1f} µs | {streamed / whole:.1f}x "
                f"| {-(-len(text) // 4):,} |"
            )
    if old and args.interleave:
        print()
        print("| payload | redact, fastest | old redact, fastest | new vs old |")
        print("|---|---:|---:|---:|")
        for name, payload in payloads().items():
            fast_new, fast_old = interleaved(
                partial(redact, payload, known),
                partial(old, payload),
                args.interleave,
            )
            ratio = fast_new / fast_old
            print(f"| {name} | {fast_new * 1e6:,.1f} µs | {fast_old * 1e6:,.1f} µs | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
