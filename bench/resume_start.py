"""Resuming a session with none, 10 MB, 100 MB and 1 GB of log before its start point.

Each log is the long session of ``bench/replay_tail.py`` (turns of a person's message, a request,
a reply and an 8-16 KB tool result up to the size asked, written with the log's own line encoder
and index format), then a real ``session.resume``, a lasting narrowing (a compaction: nothing
before it reaches a later window) and five real turns recorded with ``record.Recorder``, so the last
request's ``llm.req.start`` is the narrowing (size 0: the narrowing and its turns alone, a small
session). Each is then resumed as ``nodwyn resume`` does it
(``open_agent(resume=...)``: the recipe recorded, the window and the loop's state rebuilt), and the
resumed session sends one request to a fake chat server on 127.0.0.1. The baseline is the first
size (the small session) in the same run. For contrast, ``--whole-up-to`` also times what a
resume cost before (every event from seq 1 fed to the window and the loop's state).

    .venv/bin/python bench/resume_start.py --whole-up-to 1024 --out docs/bench-resume.md
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: bench/ is on the path, the repository is not
    sys.path.insert(0, str(ROOT))

from bench.replay_tail import MB  # noqa: E402

from bench import replay_tail  # noqa: E402
from nodwyn.agent.state import LoopState  # noqa: E402
from nodwyn.compose.setup import open_agent  # noqa: E402
from nodwyn.fakes import FakeServer  # noqa: E402
from nodwyn.log import Store  # noqa: E402
from nodwyn.log.session_log import LOG_NAME  # noqa: E402
from nodwyn.window import Window  # noqa: E402


def build(root: Path, workspace: Path, target: int, seed: int) -> tuple[Store, str, int]:
    """The session ``replay_tail`` builds, compacted after ``target`` bytes, in ``workspace``;
    returns (store, id, its start point's seq)."""
    store, sid, _, _, start = replay_tail.build(root, target, seed, str(workspace))
    return store, sid, start


def env_for(tmp: Path, root: Path, url: str) -> dict[str, str]:
    config = tmp / "config.toml"
    config.write_text(
        f'[control]\nmodel = "bench"\n\n[models.bench]\napi = "openai-chat"\nmodel = "bench-model"\n'
        f'base_url = "{url}"\ncontext_size = 98304\n'
    )
    return {
        "NODWYN_HOME": str(root),
        "NODWYN_CONFIG": str(config),
        "HOME": str(tmp),
        "XDG_CONFIG_HOME": str(tmp),
    }


def time_resume(
    env: dict[str, str], workspace: Path, sid: str, repeat: int
) -> tuple[list[float], list[float]]:
    """(resume alone, resume and one request), each ``repeat`` times."""
    opens, turns = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        opened = open_agent(env=env, workspace=workspace, resume=sid)
        try:
            opens.append(time.perf_counter() - started)
            opened.agent.user_turn("Go on.")
            turns.append(time.perf_counter() - started)
        finally:
            opened.close()
    return opens, turns


def peak_memory(env: dict[str, str], workspace: Path, sid: str) -> int:
    """Peak bytes Python allocated while resuming once (tracemalloc)."""
    tracemalloc.start()
    try:
        open_agent(env=env, workspace=workspace, resume=sid).close()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def time_whole(store: Store, sid: str) -> float:
    """What a resume cost before: every event from seq 1 through the window and the loop's state."""
    started = time.perf_counter()
    window, state = Window(), LoopState()
    with store.open(sid) as log:
        for event in log.read(1):
            window.feed(event)
            state.follow(event)
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--sizes", default="0,10,100,1024", help="MB of log before the start point (first: baseline; 0: none)"
    )
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--dir", type=Path, default=None, help="where to write the logs (default: a temp dir)")
    ap.add_argument(
        "--whole-up-to", type=int, default=100, help="time a resume from seq 1 up to this many MB"
    )
    ap.add_argument("--out", type=Path, default=None, help="write the figures as markdown here")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    replies = [{"text": "Going on."}] * (args.repeat + 1) * len(sizes)
    with (
        tempfile.TemporaryDirectory(dir=args.dir) as tmp,
        FakeServer(api="openai-chat", script=replies) as fake,
    ):
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        for i, mb in enumerate(sizes):
            root = Path(tmp) / f"s{mb}"
            t0 = time.perf_counter()
            store, sid, start = build(root, workspace, mb * MB, seed=i + 1)
            size = (store.sessions / sid / LOG_NAME).stat().st_size
            setup = time.perf_counter() - t0
            env = env_for(Path(tmp), root, fake.url)
            opens, turns = time_resume(env, workspace, sid, args.repeat)
            peak = peak_memory(env, workspace, sid)
            whole = time_whole(store, sid) if mb <= args.whole_up_to else None
            rows.append((size, start, statistics.median(opens), statistics.median(turns), peak, whole))
            print(
                f"{mb:>5} MB: {size / MB:8.1f} MB, start seq {start}, resume median "
                f"{statistics.median(opens) * 1e3:7.1f} ms, resume + one request "
                f"{statistics.median(turns) * 1e3:7.1f} ms, peak {peak / MB:.1f} MB"
                + (f", from seq 1 {whole:6.2f} s" if whole is not None else "")
                + f"  [setup {setup:.0f} s]",
                flush=True,
            )
    base_open, base_turn, base_peak, base_whole = rows[0][2], rows[0][3], rows[0][4], rows[0][5]
    lines = [
        "# Resuming a session: cost against the log before its start point",
        "",
        "Produced by `.venv/bin/python bench/resume_start.py --whole-up-to 1024 --out docs/bench-resume.md` "
        f"({args.repeat} resumes per log, median; 2-core machine shared with other work, pages warm).",
        "",
        "Each log is a long session compacted near its end (`bench/replay_tail.py`'s), so its last",
        "request's start point is the compaction. A resume (`open_agent(resume=...)`, what `nodwyn",
        "resume` does) reads back from the end to that request through the index, then feeds the",
        "window and the loop's state the events its start point keeps and those from it on (ADR 0114).",
        "Ratios are against the first log of the same run.",
        "",
        "| log | start seq | resume | ratio | resume + one request | ratio | peak Python memory | ratio "
        "| resume from seq 1 (before) | ratio |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size, start, opened, turned, peak, whole in rows:
        cells = [
            f"{size / MB:.0f} MB" if size >= MB else f"{size / 1024:.0f} KB (small)",
            str(start),
            f"{opened * 1e3:.1f} ms",
            f"{opened / base_open:.2f}x",
            f"{turned * 1e3:.1f} ms",
            f"{turned / base_turn:.2f}x",
            f"{peak / MB:.1f} MB",
            f"{peak / base_peak:.2f}x",
            f"{whole:.2f} s" if whole is not None else "not run",
            f"{whole / base_whole:.1f}x" if whole is not None and base_whole else "-",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "The resume stays flat while the log before the start point grows a hundredfold; reading",
        "every event from seq 1, as a resume did before, grows with the log.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
