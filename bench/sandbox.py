"""The sandbox's cost per shell call: the same commands through the real shell tool, sandboxed
(``workspace-write``, bubblewrap and the seccomp filter) and unsandboxed (``off``), interleaved in
one run so both see the same machine load. Prints, per command, the median and the worst time of
each and what the sandbox adds; the target is under 30 ms added per call (issue 23).

    .venv/bin/python bench/sandbox.py --runs 40 --out docs/bench-sandbox.md
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from nodwyn.agent.sandbox import Sandbox, unavailable
from nodwyn.agent.tools import ToolContext, builtin_tools, run_call
from nodwyn.agent.tools.procs import ProcessGroups
from nodwyn.compose.config import load_config
from nodwyn.compose.confinement import sandbox_for
from nodwyn.testing import isolated_env
from nodwyn.values.content import ToolCall

COMMANDS = {
    "true": "true",
    "echo + ls": "echo hello; ls -la > /dev/null",
    "python3 -c pass": "python3 -c pass",
    "write + read a file": "printf 'x%.0s' $(seq 100) > out.txt && wc -c out.txt",
    "git status": "git status --short > /dev/null 2>&1; true",
}
TARGET_MS = 30.0


def _ctx(ws: Path, box: Sandbox) -> ToolContext:
    return ToolContext(
        workspace=ws,
        read_budget_tokens=10_000,
        approve=lambda tool, what: True,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(ws.parent)},
        processes=ProcessGroups(),
        sandbox=box,
    )


def _once(ctx: ToolContext, command: str) -> float:
    call = ToolCall(id="b", name="shell", arguments=json.dumps({"command": command}))
    tools = builtin_tools()
    start = time.perf_counter()
    out = run_call(call, tools, ctx)
    took = (time.perf_counter() - start) * 1000
    if out.error:
        raise SystemExit(f"bench/sandbox.py: {command!r} failed under {ctx.sandbox.mode}: {out.text[-300:]}")
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=40, help="calls of each command in each mode")
    ap.add_argument("--out", type=Path, default=None, help="also write the table (Markdown) here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ws = root / "ws"
        (ws / ".git").mkdir(parents=True)
        (root / "config.toml").write_text("")
        env = isolated_env(root, PATH=os.environ.get("PATH", ""))
        boxed = sandbox_for(env, load_config(env))  # the hidden paths a session really has
        why = unavailable(boxed)
        if why is not None:
            raise SystemExit(f"bench/sandbox.py: {why}")
        plain = Sandbox(mode="off")
        rows = []
        for name, command in COMMANDS.items():
            on: list[float] = []
            off: list[float] = []
            _once(_ctx(ws, boxed), command)  # warm both paths once
            _once(_ctx(ws, plain), command)
            for _ in range(args.runs):  # interleaved: the same load for both
                on.append(_once(_ctx(ws, boxed), command))
                off.append(_once(_ctx(ws, plain), command))
            rows.append((name, statistics.median(off), max(off), statistics.median(on), max(on)))
    lines = [
        f"sandbox cost per shell call, {args.runs} calls of each command in each mode, interleaved "
        f"(python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})",
        "",
        "| command | off median ms | off worst ms | sandboxed median ms | sandboxed worst ms "
        "| added median ms | added worst ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, m_off, w_off, m_on, w_on in rows:
        lines.append(
            f"| {name} | {m_off:.1f} | {w_off:.1f} | {m_on:.1f} | {w_on:.1f} "
            f"| {m_on - m_off:.1f} | {w_on - w_off:.1f} |"
        )
    added = [m_on - m_off for _, m_off, _, m_on, _ in rows]
    worst = max(w_on - w_off for _, _, w_off, _, w_on in rows)
    verdict = "within" if max(added) < TARGET_MS else "over"
    lines += [
        "",
        f"added per call: median {statistics.median(added):.1f} ms (largest median {max(added):.1f} ms, "
        f"{verdict} the {TARGET_MS:.0f} ms target); the worst sandboxed call took {worst:.1f} ms more "
        "than the worst unsandboxed one",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        command = f"`.venv/bin/python bench/sandbox.py --runs {args.runs} --out {args.out}`"
        args.out.write_text(f"# The sandbox's cost per shell call\n\n{command}\n\n{text}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
