"""What ``nodwyn eval`` costs per run, and what two workers buy, on fake providers.

The same N one-request sessions (a fake openai-chat server on 127.0.0.1, fresh workspace each)
are run three ways in one process, each timed on the wall clock:

- baseline: ``nodwyn run --json`` N times, one after another (what a person's loop would do);
- ``nodwyn eval --workers 1``: the same sessions through the runner (copy, check, replay-verify,
  gather, tag, report);
- ``nodwyn eval --workers 2``.

It prints the runner's overhead per run ((eval w1 - baseline) / N) and its ratio to a plain run,
and the 2-worker speedup (w1 / w2). A session is mostly a Python process starting, so on a shared,
loaded machine the figures swing; the table says what the load was.

    .venv/bin/python bench/eval_runner.py --runs 8 --out docs/bench-eval-runner.md
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from nodwyn.fakes import FakeServer  # noqa: E402
from nodwyn.testing import isolated_env  # noqa: E402

NODWYN = str(Path(sys.executable).parent / "nodwyn")


def _setup(root: Path, url: str, runs: int) -> tuple[dict[str, str], Path]:
    root.mkdir(parents=True)
    env = isolated_env(root, PATH=os.environ.get("PATH", ""))
    Path(env["NODWYN_CONFIG"]).write_text(
        f'[control]\nmodel = "m"\n\n[models.m]\napi = "openai-chat"\nmodel = "fake-model"\n'
        f'base_url = "{url}"\ncontext_size = 32000\n'
    )
    ws = root / "tasks" / "ws"
    ws.mkdir(parents=True)
    (ws / "a.txt").write_text("a\n")
    spec = root / "spec.toml"
    spec.write_text(
        f'runs = {runs}\n[[task]]\nname = "t"\nworkspace = "tasks/ws"\nprompt = "Say 42."\n'
        "check = 'test \"$NODWYN_ANSWER\" = 42'\ntimeout = 120\n"
        '[[variant]]\nname = "v"\nmodel = "m"\n'
    )
    return env, spec


def _sequential(root: Path, runs: int) -> float:
    with FakeServer(api="openai-chat", script=[{"text": "42"}] * runs) as fake:
        env, _ = _setup(root, fake.url, runs)
        started = time.monotonic()
        for i in range(runs):
            ws = root / f"seq-{i}"
            ws.mkdir()
            argv = ["run", "--json", "-q", "--yes", "--no-project-doc", "--workspace", str(ws), "Say 42."]
            subprocess.run(
                [NODWYN, *argv],
                env=env,
                capture_output=True,
                check=True,
            )
        return time.monotonic() - started


def _eval(root: Path, runs: int, workers: int) -> float:
    with FakeServer(api="openai-chat", script=[{"text": "42"}] * runs) as fake:
        env, spec = _setup(root, fake.url, runs)
        started = time.monotonic()
        subprocess.run(
            [NODWYN, "eval", str(spec), "--workers", str(workers), "--json"],
            env=env,
            capture_output=True,
            check=True,
        )
        return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        base = _sequential(Path(tmp) / "seq", args.runs)
        w1 = _eval(Path(tmp) / "w1", args.runs, 1)
        w2 = _eval(Path(tmp) / "w2", args.runs, 2)
    n = args.runs
    per = base / n
    lines = [
        f"`bench/eval_runner.py --runs {n}` on {os.cpu_count()} cores, load average {load:.1f} at the start "
        "(a shared machine: other engineers' tests were running)",
        "",
        "| way | wall s | per run s | vs one after another |",
        "|---|---|---|---|",
        f"| `nodwyn run`, one after another (baseline) | {base:.1f} | {per:.2f} | 1.00 |",
        f"| `nodwyn eval --workers 1` | {w1:.1f} | {w1 / n:.2f} | {w1 / base:.2f} |",
        f"| `nodwyn eval --workers 2` | {w2:.1f} | {w2 / n:.2f} | {w2 / base:.2f} |",
        "",
        f"Runner overhead per run: {(w1 - base) / n:+.2f} s ({(w1 - base) / base:+.0%} of a plain run); "
        f"2-worker speedup (w1 / w2): {w1 / w2:.2f}x.",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
