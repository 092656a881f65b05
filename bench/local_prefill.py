"""Prefill on the local model (Gemma 3 270M, llama-cpp-python): warm requests against cold ones.

Runs a real session (the base model, no tools called) in a window small enough that one request
trims, then measures a cold prefill of the same prompt for two requests: one that only appended to
its predecessor, and the first one after an elision. The baseline is the cold prefill measured in
the same process; figures are ratios against it.

    .venv/bin/python bench/local_prefill.py [--turns 6] [--repeats 2]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path
from typing import Any

from nodwyn.agent.loop import Agent
from nodwyn.agent.setup import open_agent
from nodwyn.replay.exact import replay_request
from nodwyn.transport.local import LocalBackend

NOTES = [
    "the build compiles module parser and writes out/parser.o",
    "the build compiles module lexer and writes out/lexer.o",
    "the build compiles module checker and writes out/checker.o",
    "the build compiles module emitter and writes out/emitter.o",
    "the build links everything into bin/tool",
    "the tests run from tests/ against bin/tool",
    "the release step packs bin/tool into dist/tool.tar.gz",
    "the docs are built from docs/ into site/",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=2, help="cold prefills per measured prompt (median)")
    parser.add_argument("--high-water", type=int, default=1500)
    parser.add_argument("--low-water", type=int, default=1000)
    parser.add_argument("--output-reserve", type=int, default=32)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nodwyn-bench-") as tmp:
        run(args, Path(tmp))


def run(args: argparse.Namespace, tmp: Path) -> None:
    (tmp / "ws").mkdir()
    (tmp / "config.toml").write_text(
        f"[window]\nhigh_water = {args.high_water}\nlow_water = {args.low_water}\n"
        f"output_reserve = {args.output_reserve}\n"
    )
    env = {
        "NODWYN_HOME": str(tmp / "home"),
        "NODWYN_CONFIG": str(tmp / "config.toml"),
        "XDG_CONFIG_HOME": str(tmp / "cfg"),
        "HOME": str(tmp),
    }
    backend = LocalBackend()
    backend.forget()
    agent = open_agent(env=env, workspace=tmp / "ws", backend_for=lambda s: backend).agent
    try:
        report(agent, backend, args)
    finally:
        agent.log.close()


def report(agent: Agent, backend: LocalBackend, args: argparse.Namespace) -> None:
    for i in range(args.turns):
        agent.user_turn(f"Note {i + 1}: {NOTES[i % len(NOTES)]}; check it.")
    events = list(agent.log.read(1))
    reqs = [e for e in events if e.kind == "llm.req"]
    resps: dict[int, dict[str, Any]] = {
        e.data["req"]: e.data["response"] for e in events if e.kind == "llm.resp"
    }

    print(f"session {agent.session_id} ({len(reqs)} requests, model {agent.model.model})")
    print(f"{'req':>5} {'trim':>5} {'elided':>10} {'prompt':>7} {'cached':>7} {'prefill ms':>11}")
    for e in reqs:
        u, t = resps[e.seq]["usage"], resps[e.seq]["timings"]
        elided = ",".join(map(str, e.data["elided"])) or "-"
        trim = "yes" if e.data["trim"] else ""
        print(
            f"{e.seq:>5} {trim:>5} {elided:>10} {u['prompt_tokens']:>7} {u['cached_tokens']:>7} "
            f"{t['prefill_ms']:>11.0f}"
        )

    def cold(seq: int) -> float:
        request = replay_request(agent.log, seq).request
        times = []
        for _ in range(args.repeats):
            backend.forget()
            r = backend.send(request, agent.model, session_key="bench")
            assert r.timings.prefill_ms is not None
            times.append(r.timings.prefill_ms)
        return statistics.median(times)

    cases = []
    appended = next((e for e in reqs[1:] if not e.data["trim"]), None)
    if appended is not None:
        cases.append(("appended to its predecessor", appended))
    trimmed = next((e for e in reqs if e.data["trim"] and e.data["elided"]), None)
    if trimmed is not None:
        cases.append(("first request after an elision", trimmed))
    else:
        print("no request trimmed: lower --high-water")
    print()
    print(f"{'request':<32} {'prompt':>7} {'reused':>7} {'warm ms':>8} {'cold ms':>8} {'warm/cold':>10}")
    for label, e in cases:
        u, t = resps[e.seq]["usage"], resps[e.seq]["timings"]
        c = cold(e.seq)
        print(
            f"{label:<32} {u['prompt_tokens']:>7} {u['cached_tokens']:>7} {t['prefill_ms']:>8.0f} {c:>8.0f} "
            f"{t['prefill_ms'] / c:>10.2f}"
        )


if __name__ == "__main__":
    main()
