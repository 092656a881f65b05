"""Warm starts of the local model across processes (issue 25): `nodwyn run` as a person runs it,
each session its own process, sharing one KV state folder.

1. a first session, with the state folder empty: its first request prefills everything (cold);
2. new sessions, each with another task, after it: their first requests load the saved shared
   prefix (system prompt and tools) and prefill only their own message;
3. the baseline, measured in the same run: each of those tasks again as a new session with an
   empty state folder (a cold prefill of the same prompt);
4. the first session resumed, in a new process: its first request loads its own saved state.

Figures: each warm first request's prefill (milliseconds and tokens) against the cold one of the
same prompt, the stderr line each cold request printed, and each process's peak memory (RSS).

    nice .venv/bin/python bench/local_warm_start.py [--model local] [--sessions 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodwyn.log import Store
from nodwyn.testing import isolated_env
from nodwyn.transport.weights import default_cache_dir

NODWYN = str(Path(sys.executable).parent / "nodwyn")
TASKS = [
    "Without calling any tool, reply with the single word: ok",
    "Without calling any tool, say in one word what colour the sky is.",
    "Without calling any tool, reply with the number two as a digit.",
    "Without calling any tool, name one vowel.",
    "Without calling any tool, reply with the word: done",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    label: str
    session: str
    code: int
    prompt: int
    cached: int
    prefill_ms: float
    peak_mb: float
    cold_lines: list[str]
    seconds: float


def _env(root: Path, model: str) -> dict[str, str]:
    """A person's environment under ``root`` whose cache holds the GGUF already assembled (a
    link to the user's), and a state folder of its own."""
    cache = root / "cache"
    (cache / "nodwyn").mkdir(parents=True, exist_ok=True)
    models = default_cache_dir() / "models"
    models.mkdir(parents=True, exist_ok=True)
    link = cache / "nodwyn" / "models"
    if not link.exists():
        link.symlink_to(models)
    env = isolated_env(root, XDG_CACHE_HOME=str(cache), PATH=os.environ.get("PATH", ""))
    Path(env["NODWYN_CONFIG"]).write_text(f'[control]\nmodel = "{model}"\n')
    return env


def _nodwyn(env: dict[str, str], ws: Path, label: str, *args: str) -> Run:
    done = subprocess.run(
        ["/usr/bin/time", "-f", "peak-rss-kb %M elapsed %e", NODWYN, *args, "--yes", "--json"],
        env=env,
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    doc: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}
    session = str(doc.get("session", ""))
    m = re.search(r"peak-rss-kb (\d+) elapsed ([\d.]+)", done.stderr)
    first: dict[str, Any] = {}
    if session:
        with Store(Path(env["NODWYN_HOME"])).open(session) as log:
            starts = [e.seq for e in log.read(1) if e.kind in ("session.start", "session.resume")]
            resps = [e for e in log.read(starts[-1]) if e.kind == "llm.resp"]
        first = resps[0].data["response"] if resps else {}
    usage = first.get("usage", {})
    return Run(
        label=label,
        session=session,
        code=done.returncode,
        prompt=int(usage.get("prompt_tokens") or 0),
        cached=int(usage.get("cached_tokens") or 0),
        prefill_ms=float(first.get("timings", {}).get("prefill_ms") or 0.0),
        peak_mb=int(m.group(1)) / 1024 if m else 0.0,
        cold_lines=[line for line in done.stderr.splitlines() if "cold prefill" in line],
        seconds=float(m.group(2)) if m else 0.0,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local")
    parser.add_argument("--sessions", type=int, default=3, help="new sessions after the first")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nodwyn-warm-") as tmp:
        root = Path(tmp)
        ws = root / "ws"
        ws.mkdir()
        (ws / "README.md").write_text("A scratch project.\n")
        shared = _env(root / "shared", args.model)
        runs = [_nodwyn(shared, ws, "first session (empty state folder)", "run", TASKS[0])]
        pairs = []
        for n in range(1, args.sessions + 1):
            warm = _nodwyn(shared, ws, f"new session {n}", "run", TASKS[n % len(TASKS)])
            fresh = root / f"cold{n}"
            cold = _nodwyn(
                _env(fresh, args.model), ws, f"new session {n}, cold baseline", "run", TASKS[n % len(TASKS)]
            )
            shutil.rmtree(fresh, ignore_errors=True)
            runs += [warm, cold]
            pairs.append((warm, cold))
        runs.append(_nodwyn(shared, ws, "first session resumed", "resume", runs[0].session, "Reply: ok"))
        kv = root / "shared" / "cache" / "nodwyn" / "local-kv"
        states = sorted((p.name, p.stat().st_size) for p in kv.glob("*.kv"))
    print(f"model {args.model}; first request of each process\n")
    print("| run | exit | prompt tok | reused tok | prefill ms | peak RSS MB | wall s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in runs:
        print(
            f"| {r.label} | {r.code} | {r.prompt:,} | {r.cached:,} | {r.prefill_ms:,.0f} | "
            f"{r.peak_mb:,.0f} | {r.seconds:.1f} |"
        )
    print("\n| new session | prefill warm / cold (ms) | prefilled tokens warm / cold |")
    print("|---|---:|---:|")
    for n, (warm, cold) in enumerate(pairs, start=1):
        ratio = warm.prefill_ms / cold.prefill_ms if cold.prefill_ms else float("nan")
        print(
            f"| {n} | {warm.prefill_ms:,.0f} / {cold.prefill_ms:,.0f} = {ratio:.1%} | "
            f"{warm.prompt - warm.cached:,} / {cold.prompt - cold.cached:,} |"
        )
    print("\nstderr of the cold requests:")
    for r in runs:
        for line in r.cold_lines:
            print(f"- {r.label}: {line}")
    print("\nstate files: " + ", ".join(f"{name} {size / 1024**2:.1f} MiB" for name, size in states))


if __name__ == "__main__":
    main()
