"""Prefill on the local model (llama-cpp-python): every request of a real session against a cold
prefill of the same prompt.

Runs a real multi-request session on a built-in local model (default ``local``, Qwen2.5-Coder-1.5B;
``local-tiny`` is Gemma 3 270M base) in a small fixture workspace: the model reads files, edits one
and runs a command over several turns, in a window small enough that a request trims. Then, for
every request, it measures a cold prefill of the same prompt (rebuilt from the log, KV cache
dropped) in the same process: that cold prefill is the baseline, and each figure is the warm
prefill's ratio to it. Requests that are not trim points should cost a small fraction (at
most 10%); a trim point re-prefills what follows its first elided entry.

    .venv/bin/python bench/local_prefill.py [--model local] [--repeats 1]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path
from typing import Any

from nodwyn.agent.loop import Agent
from nodwyn.compose.setup import open_agent
from nodwyn.replay.exact import replay_request, verify_all
from nodwyn.testing import isolated_env
from nodwyn.transport.local import LocalBackend, cores

FILES = {
    "calc.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
    "notes.txt": "add() should return the sum of its two arguments.\nmul() is correct.\n",
    "server.conf": "# server settings\nhost = 0.0.0.0\nport = 8731\nworkers = 4\n",
}
TURNS = [  # each asks for a tool, as the evaluation's tasks the model solves do
    "Which port does server.conf set?",
    "List the files in the project.",
    "Run python3 -c 'import calc; print(calc.add(2, 3))' and tell me what it prints.",
    "What does notes.txt say about add?",
    "Create a file done.txt that contains exactly: ok",
    "Which host does server.conf set?",
]
NOTES = [  # local-tiny (a base model) gets plain notes: it calls no tools
    "the build compiles module parser and writes out/parser.o",
    "the build compiles module lexer and writes out/lexer.o",
    "the build compiles module checker and writes out/checker.o",
    "the build compiles module emitter and writes out/emitter.o",
    "the build links everything into bin/tool",
    "the tests run from tests/ against bin/tool",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local", help="local (Qwen) or local-tiny (Gemma)")
    parser.add_argument("--turns", type=int, default=len(TURNS))
    parser.add_argument("--repeats", type=int, default=1, help="cold prefills per request (median)")
    parser.add_argument("--high-water", type=int, default=2000)
    parser.add_argument("--low-water", type=int, default=1500)
    parser.add_argument("--output-reserve", type=int, default=256)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nodwyn-bench-") as tmp:
        run(args, Path(tmp))


def run(args: argparse.Namespace, tmp: Path) -> None:
    ws = tmp / "ws"
    ws.mkdir()
    for name, text in FILES.items():
        (ws / name).write_text(text)
    (tmp / "config.toml").write_text(
        f'[control]\nmodel = "{args.model}"\n'
        f"[window]\nhigh_water = {args.high_water}\nlow_water = {args.low_water}\n"
        f"output_reserve = {args.output_reserve}\n"
    )
    env = isolated_env(tmp, XDG_CACHE_HOME=str(tmp / "cache"))
    backend = LocalBackend()
    backend.forget()
    agent = open_agent(env=env, workspace=ws, yes=True, backend_for=lambda s: backend).agent
    try:
        report(agent, backend, args)
    finally:
        agent.log.close()


def report(agent: Agent, backend: LocalBackend, args: argparse.Namespace) -> None:
    tiny = agent.model.name == "local-tiny"
    for i in range(args.turns):
        text = f"Note {i + 1}: {NOTES[i % len(NOTES)]}; check it." if tiny else TURNS[i % len(TURNS)]
        agent.user_turn(text)
    events = list(agent.log.read(1))
    reqs = [e for e in events if e.kind == "llm.req"]
    resps: dict[int, dict[str, Any]] = {
        e.data["req"]: e.data["response"] for e in events if e.kind == "llm.resp"
    }
    calls = sum(1 for e in events if e.kind == "tool.result")
    bad = [v for v in verify_all(agent.log) if v.error is not None]
    assert not bad, bad[0].error

    def cold(seq: int) -> float:
        request = replay_request(agent.log, seq).request
        times = []
        for _ in range(args.repeats):
            backend.forget()
            r = backend.send(request, agent.model, session_key="bench")
            assert r.timings.prefill_ms is not None and r.usage.cached_tokens == 0
            times.append(r.timings.prefill_ms)
        return statistics.median(times)

    print(
        f"session {agent.session_id}: model {agent.model.name} ({agent.model.model}), {len(reqs)} requests, "
        f"{calls} tool calls, every request replayed; {cores()} cores for llama.cpp"
    )
    print()
    print(
        "| req seq | trim | elided | prompt tokens | reused | warm prefill ms | cold prefill ms "
        "| warm / cold |"
    )
    print("|---:|:---:|---:|---:|---:|---:|---:|---:|")
    plain: list[float] = []
    trims: list[float] = []
    for e in reqs:
        u, t = resps[e.seq]["usage"], resps[e.seq]["timings"]
        c = cold(e.seq)
        ratio = t["prefill_ms"] / c
        first = e is reqs[0]
        if e.data["trim"]:
            trims.append(ratio)
        elif not first:
            plain.append(ratio)
        elided = ", ".join(map(str, e.data["elided"])) or "-"
        trim = "yes" if e.data["trim"] else ""
        print(
            f"| {e.seq} | {trim} | {elided} | {u['prompt_tokens']:,} | {u['cached_tokens']:,} | "
            f"{t['prefill_ms']:,.0f} | {c:,.0f} | {ratio:.3f} |"
        )
    print()
    if plain:
        print(
            f"requests that are not trim points (after the first): {len(plain)}; warm/cold min "
            f"{min(plain):.3f}, median {statistics.median(plain):.3f}, max {max(plain):.3f}; "
            f"{sum(r <= 0.10 for r in plain)} of {len(plain)} at most 0.10"
        )
    if trims:
        print(f"trim points: {len(trims)}; warm/cold {', '.join(f'{r:.3f}' for r in trims)}")
    else:
        print("no request trimmed: lower --high-water")


if __name__ == "__main__":
    main()
