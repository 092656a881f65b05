"""Replay of a request late in a 10 MB, 100 MB and 1 GB session log: it reads from the start point.

Each log is a long session: ``session.start`` (a real recipe), then turns of a person's message, a
request, a reply and a tool result (8-16 KB) up to the size asked, written with the log's own line
encoder and index format (writing them through ``log.append`` would only make the setup slower),
then a real ``session.resume``, a lasting narrowing (a compaction: nothing before it reaches a later
window) and five real turns recorded with ``record.Recorder``. The last request is the
one replayed: ``replay_request`` seeks to the start point its ``llm.req`` recorded and feeds the
window the events from there, so its cost should not grow with the log. Each replay opens the
session afresh; ``--repeat`` times, the pages warm. The baseline is the 10 MB log in the same run.
For contrast, ``--scan`` also times one read of every event from seq 1 (what a replay that ignored
the start point would at least cost).

    .venv/bin/python bench/replay_tail.py --scan --out docs/bench-replay.md
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from nodwyn.log import Store
from nodwyn.log.index import INDEX_NAME, IndexFile
from nodwyn.log.jsonl import encode_line
from nodwyn.log.session_log import LOG_NAME, format_time
from nodwyn.record import Recorder, resume_session, start_session
from nodwyn.replay.exact import replay_request
from nodwyn.values import codec
from nodwyn.values.canonical import canonical_bytes
from nodwyn.values.content import Origin, ToolCall
from nodwyn.values.events import CtxOpen, LlmResp, ToolResult, UserMsg
from nodwyn.values.recipe import Recipe, WindowLimits
from nodwyn.values.request import Response, ToolSpec, Usage

MB = 1 << 20
ORIGIN = Origin(model="bench-model", url="http://127.0.0.1:9/v1", credential="BENCH_KEY")
RECIPE = Recipe(
    version=19,
    system="You are a careful coding agent.",
    tools=(
        ToolSpec(name="fs-read", description="Read a file.", parameters={"type": "object"}),
        ToolSpec(name="shell", description="Run a command.", parameters={"type": "object"}),
    ),
    limits=WindowLimits(
        high_water=60_000, low_water=30_000, max_result_tokens=3_072, output_reserve=8_192, ceiling=80_000
    ),
    context_size=98_304,
)


def _filler(folder: Path, first_seq: int, start_bytes: int, target: int, seed: int) -> list[int]:
    """Append turns to log.jsonl until it holds ``target`` bytes; return every line's end offset."""
    rng = random.Random(seed)
    text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz     \n{}()=.,") for _ in range(40_000))
    t = format_time(datetime(2026, 11, 29, 12, tzinfo=UTC))
    origin = codec.origin_to_json(ORIGIN)
    ends: list[int] = []
    size, seq, turn = start_bytes, first_seq, 0
    with open(folder / LOG_NAME, "ab", buffering=8 * MB) as fh:

        def put(kind: str, data: dict[str, object]) -> int:
            nonlocal size, seq
            line = encode_line(seq, t, kind, "main", data)
            fh.write(line)
            size += len(line)
            ends.append(size)
            seq += 1
            return seq - 1

        while size < target:
            turn += 1
            a = rng.randrange(0, 30_000)
            put("user.msg", {"text": f"task {turn}: " + text[a : a + 400]})
            req = put(
                "llm.req", {"model": "bench", "origin": origin, "elided": [], "estimate": 0, "trim": False}
            )
            call = ToolCall(id=f"f{turn}", name="fs-read", arguments='{"path":"x"}')
            resp = Response(text=text[a : a + 1500], calls=(call,), usage=Usage(prompt_tokens=1))
            put("llm.resp", {"req": req, "response": codec.response_to_json(resp)})
            n = rng.randrange(8_000, 16_000)
            put(
                "tool.result",
                {"call_id": call.id, "name": call.name, "text": text[a : a + n], "error": False},
            )
    return ends


def build(
    root: Path, target: int, seed: int, workspace: str = "/bench"
) -> tuple[Store, str, int, bytes, int]:
    """The session; returns (store, id, seq of the last request, its bytes as sent, its start seq)."""
    store = Store(root, fsync=False)
    log = start_session(store, RECIPE, "bench", workspace)
    sid = log.id
    log.close()
    folder = store.sessions / sid
    head = (folder / LOG_NAME).read_bytes()
    ends = [len(head)] + _filler(folder, 2, len(head), target, seed)
    IndexFile.write_new(folder / INDEX_NAME, ends).close()
    log = resume_session(store, sid, RECIPE, "bench")
    rec = Recorder(log)
    rec.feed([next(log.read(log.last_seq, log.last_seq))])  # the recipe, then the compaction on
    rec.append(CtxOpen(id="c1", kind="narrow", lasting=True, system="Go on."))
    rec.append(UserMsg(text="handover: the work so far is done"), ctx="c1")
    sent = b""
    last = 0
    for i in range(5):
        b, req = rec.request("c1", ORIGIN, model="bench")
        call = ToolCall(id=f"t{i}", name="shell", arguments=f'{{"cmd":"step {i}"}}')
        resp = Response(text=f"step {i}", calls=(call,), usage=Usage(prompt_tokens=1))
        rec.append(LlmResp(req=req.seq, response=resp), ctx="c1")
        rec.append(
            ToolResult(call_id=call.id, name="shell", text=f"output {i}\n" * 50, error=False), ctx="c1"
        )
        sent, last = canonical_bytes(codec.request_to_json(b.request)), req.seq
        start = req.data["start"]["seq"]
    log.close()
    return store, sid, last, sent, start


def time_replay(store: Store, sid: str, seq: int, sent: bytes, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        with store.open(sid) as log:
            got = replay_request(log, seq)
        times.append(time.perf_counter() - started)
        assert got.canonical == sent, "replay rebuilt other bytes than were sent"
    return times


def time_whole(store: Store, sid: str, seq: int, sent: bytes) -> float:
    """One replay that ignores the start point: every event from seq 1 through the window."""
    started = time.perf_counter()
    with store.open(sid) as log:
        got = replay_request(log, seq, whole=True)
    assert got.canonical == sent
    return time.perf_counter() - started


def time_scan(store: Store, sid: str) -> float:
    started = time.perf_counter()
    with store.open(sid) as log:
        n = sum(1 for _ in log.read())
    assert n > 0
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10,100,1024", help="log sizes in MB (the first is the baseline)")
    ap.add_argument("--repeat", type=int, default=21)
    ap.add_argument("--dir", type=Path, default=None, help="where to write the logs (default: a temp dir)")
    ap.add_argument("--scan", action="store_true", help="also time one read of every event from seq 1")
    ap.add_argument(
        "--whole-up-to", type=int, default=100, help="time a replay from seq 1 for logs up to this many MB"
    )
    ap.add_argument("--out", type=Path, default=None, help="write the figures as markdown here")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for i, mb in enumerate(sizes):
            t0 = time.perf_counter()
            store, sid, seq, sent, start = build(Path(tmp) / f"s{mb}", mb * MB, seed=i + 1)
            size = (store.sessions / sid / LOG_NAME).stat().st_size
            setup = time.perf_counter() - t0
            times = time_replay(store, sid, seq, sent, args.repeat)
            scan = time_scan(store, sid) if args.scan else None
            whole = time_whole(store, sid, seq, sent) if mb <= args.whole_up_to else None
            rows.append((size, seq, start, statistics.median(times), min(times), scan, whole))
            print(
                f"{mb:>5} MB: {size / MB:8.1f} MB, request seq {seq} (start seq {start}), "
                f"replay median {statistics.median(times) * 1e3:7.2f} ms, min {min(times) * 1e3:7.2f} ms"
                + (f", full read {scan:7.2f} s" if scan is not None else "")
                + (f", replay from seq 1 {whole:7.2f} s" if whole is not None else "")
                + f"  [setup {setup:.0f} s]",
                flush=True,
            )
    base, base_min, base_scan, base_whole = rows[0][3], rows[0][4], rows[0][5], rows[0][6]
    lines = [
        "# Replay of a late request: cost against the log's size",
        "",
        "Produced by `.venv/bin/python bench/replay_tail.py --scan --out docs/bench-replay.md` "
        f"({args.repeat} replays per log, median; 2-core machine, pages warm).",
        "",
        "Each log is a long session compacted near its end; the replayed request is the last of five",
        "after the compaction. `replay_request` seeks to the start point the request recorded (its",
        "`llm.req.start`: the recipe in force, then the events from the compaction on) and verifies the",
        "digest. The ratio is against the first log of the same run.",
        "",
        "| log | events | start seq | replay (median) | ratio | replay (min) | ratio | read every event "
        "| ratio | replay from seq 1 | ratio |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size, seq, start, med, low, scan, whole in rows:
        cells = [
            f"{size / MB:.0f} MB",
            str(seq + 2),
            str(start),
            f"{med * 1e3:.2f} ms",
            f"{med / base:.2f}x",
            f"{low * 1e3:.2f} ms",
            f"{low / base_min:.2f}x",
            f"{scan:.2f} s" if scan is not None else "-",
            f"{scan / base_scan:.1f}x" if scan is not None and base_scan else "-",
            f"{whole:.2f} s" if whole is not None else "not run",
            f"{whole / base_whole:.1f}x" if whole is not None and base_whole else "-",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "The replay stays flat while the log grows a hundredfold: it reads the recipe and the few",
        "index entries it needs, then the events after the start point. For contrast, reading every",
        "event and replaying from seq 1 (`replay_request(..., whole=True)`, what replay costs without",
        "the start point, and what a request before any compaction costs, since the main conversation",
        "reaches back to the first event) grow with the log.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
