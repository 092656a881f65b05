"""shell: run a command in the workspace with a timeout; output and exit status go to the model."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from typing import IO, Any

from nodwyn.agent.tools.base import Outcome, Tool, ToolContext, declined, fail
from nodwyn.values.request import ToolSpec

MAX_OUTPUT = 256 * 1024  # bytes kept (head and tail) of a command's output


def _clip(out: IO[bytes]) -> str:
    """The command's output, or its head and tail when it is longer than MAX_OUTPUT (the rest is
    never read into memory)."""
    size = out.seek(0, os.SEEK_END)
    out.seek(0)
    if size <= MAX_OUTPUT:
        return out.read().decode("utf-8", errors="replace")
    half = MAX_OUTPUT // 2
    head = out.read(half).decode("utf-8", errors="replace")
    out.seek(size - half)
    tail = out.read(half).decode("utf-8", errors="replace")
    return f"{head}\n[{size - MAX_OUTPUT} bytes of output omitted]\n{tail}"


def _shell(args: dict[str, Any], ctx: ToolContext) -> Outcome:
    command: str = args["command"]
    if not command.strip():
        return fail("shell: command is empty")
    timeout = float(args.get("timeout", ctx.shell_timeout))
    timeout = max(1.0, min(timeout, ctx.shell_timeout))
    if not ctx.approve("shell", command):
        return declined("shell", f"run: {command}")
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            cwd=ctx.workspace,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        timed_out = False
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            code = proc.wait()
        text = _clip(out)
    if timed_out:
        return fail(f"{text}[timed out after {timeout:g} s; the command was killed]")
    return Outcome(text=f"{text}[exit {code}]", error=code != 0)


SHELL = Tool(
    spec=ToolSpec(
        name="shell",
        description="Run a shell command in the workspace; returns its output and exit status.",
        parameters={
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "timeout": {"type": "integer", "description": "seconds (capped by the configuration)"},
            },
            "required": ["command"],
            "additionalProperties": False,
        },
    ),
    run=_shell,
    mutating=True,
)
