"""Peak memory and time of HttpBackend on a flood: a 200 MB reply from a fake on 127.0.0.1.

Each case runs in a child process of its own (so its peak resident set, ``ru_maxrss``, is its own):
the fake (``nodwyn.fakes``, a real HTTP server in that child; it makes the flood as it sends it,
holding none of it) streams an openai-chat reply whose text is ``--mb`` megabytes, as 64 KB deltas
or as one ``data:`` line, and ``HttpBackend.send`` reads it under a reply cap. The baseline is the
same child sending a 1 KB reply; figures are printed as ratios against it (extra peak memory per
megabyte of reply, and time).

    .venv/bin/python bench/reply_flood.py --mb 200 --out docs/bench-transport.md
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES: dict[str, tuple[str, bool, int | None]] = {
    # name: (what, one line?, cap in MB; None = above the reply)
    "baseline": ("1 KB reply", False, None),
    "deltas-capped": ("64 KB deltas, default cap (64 MB)", False, 64),
    "line-capped": ("one data: line, default cap (64 MB)", True, 64),
    "deltas-whole": ("64 KB deltas, cap above the reply", False, None),
    "line-whole": ("one data: line, cap above the reply", True, None),
}


def child(case: str, mb: int) -> dict[str, object]:
    from nodwyn.errors import ProviderError
    from nodwyn.fakes import FakeServer
    from nodwyn.transport.credentials import Credentials
    from nodwyn.transport.http import HttpBackend
    from nodwyn.transport.limits import MIB, NetworkLimits
    from nodwyn.values.content import TextPart, UserMessage
    from nodwyn.values.model import ModelEntry
    from nodwyn.values.request import Request

    _, line, cap = CASES[case]
    size = 1024 if case == "baseline" else mb * MIB
    limits = NetworkLimits(reply_timeout=600, max_retries=0, max_reply_bytes=(cap or mb * 2) * MIB)
    request = Request(
        system="s", tools=(), messages=(UserMessage(parts=(TextPart(text="flood me"),)),), max_output=10
    )
    with FakeServer(api="openai-chat", script=[{"flood": {"bytes": size, "line": line}}]) as fake:
        settings = ModelEntry(
            name="flood", api="openai-chat", model="fake-model", context_size=8192, base_url=fake.url
        )
        start = time.perf_counter()
        with HttpBackend(Credentials(), limits=limits) as backend:
            try:
                reply = backend.send(request, settings, session_key=None)
                outcome = f"whole reply, {len(reply.text) / MIB:.0f} MB of text"
            except ProviderError as exc:
                outcome = f"refused: {str(exc).split(';')[0]}"
        seconds = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"case": case, "seconds": seconds, "peak_mb": peak_kb / 1024, "outcome": outcome}


def run(case: str, mb: int) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", case, "--mb", str(mb)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=int, default=200, help="size of the flood in MB (default 200)")
    parser.add_argument("--out", type=Path, default=None, help="write the table to this markdown file")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.mb)))
        return
    rows = [run(case, args.mb) for case in CASES]
    base = rows[0]
    base_peak, base_s = float(str(base["peak_mb"])), float(str(base["seconds"]))
    lines = [
        f"Flood of {args.mb} MB from a fake openai-chat server on 127.0.0.1 "
        f"(`bench/reply_flood.py --mb {args.mb}`); baseline: a 1 KB reply, "
        f"peak {base_peak:.0f} MB resident, {base_s * 1000:.0f} ms.",
        "",
        "| case | outcome | peak resident MB | extra MB per MB of flood | time s | time / baseline |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows[1:]:
        peak, seconds = float(str(row["peak_mb"])), float(str(row["seconds"]))
        what = CASES[str(row["case"])][0]
        lines.append(
            f"| {what} | {row['outcome']} | {peak:.0f} | {(peak - base_peak) / args.mb:.2f} | "
            f"{seconds:.1f} | {seconds / base_s:.0f}x |"
        )
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(
            "# Transport under a flood\n\n"
            "How much memory and time a reply far larger than any model writes costs the client, "
            "and that the reply cap ([network] max_reply_mb, ADR 0140) bounds it.\n\n" + text + "\n"
        )


if __name__ == "__main__":
    main()
