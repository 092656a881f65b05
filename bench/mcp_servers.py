"""What MCP servers cost a session: its start with 3 stdio servers against none, and one call of an
MCP tool against a call of a built-in tool, in one run.

Session start is ``open_agent`` to a session ready for its first message (config read, servers
spawned, ``initialize`` and ``tools/list`` answered, the recipe and its ``session.start`` written),
then ``close`` (servers ended); the baseline is the same without ``[mcp.*]`` entries. The servers
are the tests' calc server (Python, the SDK's server API), in the session's sandbox (bwrap,
``workspace-write``, the default), and once more with ``sandbox = "off"`` to show bwrap's share.
A call is ``run_call`` of ``mcp__calc__echo`` (arguments checked, JSON-RPC over stdio, the result
mapped) against ``fs-read`` of a small file (the built-in's whole path). Medians; ratios against
the baseline of the same run.

    .venv/bin/python bench/mcp_servers.py --out docs/bench-mcp.md
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

ROOT = Path(__file__).resolve().parents[1]
CALC = ROOT / "tests" / "mcp_tools" / "calc_server.py"
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from nodwyn.agent.tools import run_call  # noqa: E402
from nodwyn.compose.setup import Opened, open_agent  # noqa: E402
from nodwyn.testing import ScriptedBackend, isolated_env  # noqa: E402
from nodwyn.values.content import ToolCall  # noqa: E402


def _config(root: Path, url: str, servers: int, sandbox: str | None = None) -> dict[str, str]:
    text = f'[control]\nmodel = "m"\n\n[models.m]\napi = "openai-chat"\nmodel = "fake"\nbase_url = "{url}"\n'
    text += "context_size = 32000\n"
    for i in range(servers):
        text += f"\n[mcp.calc{i}]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(CALC))}]\n"
        text += 'approve = "auto"\nstart_timeout = 300\n'  # measured, not cut off, on a busy machine
        if sandbox is not None:
            text += f"sandbox = {json.dumps(sandbox)}\n"
    (root / "config.toml").write_text(text)
    return isolated_env(root)


def _open(root: Path, ws: Path, model: ScriptedBackend, servers: int, sandbox: str | None = None) -> Opened:
    env = _config(root, model.url, servers, sandbox)
    return open_agent(env=env, workspace=ws, backend_for=lambda _: model)


def start_seconds(
    root: Path, ws: Path, servers: int, runs: int, sandbox: str | None = None
) -> tuple[list[float], list[float]]:
    """Each run's open (to ready for the first message) and close (servers ended)."""
    opens, closes = [], []
    with ScriptedBackend([]) as model:
        for _ in range(runs):
            t0 = time.perf_counter()
            opened = _open(root, ws, model, servers, sandbox)
            t1 = time.perf_counter()
            if servers and len(opened.agent.settings.tools) < 20:
                raise SystemExit(f"the servers did not start: {opened.servers}")
            opened.close()
            opens.append(t1 - t0)
            closes.append(time.perf_counter() - t1)
    return opens, closes


def call_seconds(root: Path, ws: Path, calls: int) -> tuple[list[float], list[float]]:
    with ScriptedBackend([]) as model:
        opened = _open(root, ws, model, 1)
        try:
            agent = opened.agent
            tools, ctx = agent.settings.tools, agent.tool_context
            read = ToolCall(id="r", name="fs-read", arguments='{"path": "notes.txt"}')
            echo = ToolCall(id="e", name="mcp__calc0__echo", arguments='{"text": "hello"}')
            for call in (read, echo):  # warm both paths once
                assert not run_call(call, tools, ctx).error, run_call(call, tools, ctx).text
            builtin, mcp = [], []
            for _ in range(calls):
                t0 = time.perf_counter()
                run_call(read, tools, ctx)
                builtin.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                run_call(echo, tools, ctx)
                mcp.append(time.perf_counter() - t0)
        finally:
            opened.close()
    return builtin, mcp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="session starts of each kind")
    parser.add_argument("--calls", type=int, default=200, help="calls of each tool")
    parser.add_argument("--out", type=Path, default=None, help="write the table to this markdown file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ws = root / "ws"
        ws.mkdir()
        (ws / "notes.txt").write_text("hello\n" * 20)
        none, none_close = start_seconds(root, ws, 0, args.runs)
        three, three_close = start_seconds(root, ws, 3, args.runs)
        off, _ = start_seconds(root, ws, 3, args.runs, sandbox="off")
        builtin, mcp = call_seconds(root, ws, args.calls)
    s0, s3 = statistics.median(none), statistics.median(three)
    c0, c1 = statistics.median(builtin), statistics.median(mcp)
    rows = [
        ("session start, no MCP server (baseline)", f"{s0 * 1000:.0f} ms", "1.0x"),
        ("session start, 3 stdio servers (in the sandbox, bwrap)", f"{s3 * 1000:.0f} ms", f"{s3 / s0:.1f}x"),
        (
            'session start, 3 stdio servers (sandbox = "off")',
            f"{statistics.median(off) * 1000:.0f} ms",
            f"{statistics.median(off) / s0:.1f}x",
        ),
        ("session end, no MCP server", f"{statistics.median(none_close) * 1000:.0f} ms", ""),
        (
            "session end, 3 stdio servers (stdin closed, groups waited for)",
            f"{statistics.median(three_close) * 1000:.0f} ms",
            "",
        ),
        ("call of fs-read (built-in, baseline)", f"{c0 * 1e6:.0f} µs", "1.0x"),
        ("call of mcp__calc0__echo (stdio, in the sandbox)", f"{c1 * 1e6:.0f} µs", f"{c1 / c0:.1f}x"),
    ]
    lines = [
        "| what | median | against its baseline |",
        "|---|---|---|",
        *[f"| {a} | {b} | {c} |" for a, b, c in rows],
        "",
        f"{args.runs} session starts of each kind, {args.calls} calls of each tool, one run "
        f"(`bench/mcp_servers.py`); Python {sys.version.split()[0]}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f} at the end (the machine is shared: compare ratios).",
    ]
    table = "\n".join(lines)
    print(table)
    if args.out is not None:
        head = (
            "# MCP servers: session start and call overhead\n\n"
            + (__doc__ or "").split("\n\n    ")[0]
            + "\n\n"
        )
        args.out.write_text(head + table + "\n")


if __name__ == "__main__":
    main()
