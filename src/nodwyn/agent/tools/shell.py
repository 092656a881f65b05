"""shell: run a command in the workspace with a timeout; output and exit status go to the model.

The command runs as ``/bin/sh -c`` in the session's sandbox (``agent.sandbox``: bubblewrap, by
default ``workspace-write`` without network; ADR 0350), in a session (process group) of its own,
stdin closed, with the person's environment less its credentials (``tools.env``). A sandbox that
cannot run here is one error line saying how to fix it, never an unsandboxed run; every result
records the mode it ran under (``Outcome.sandbox``). Its output (stdout and stderr together)
comes through a pipe that a reader thread drains as it arrives, keeping only the head and the tail
(``MAX_OUTPUT``) in memory and nothing on disk; a command that writes more than ``MAX_STREAM`` in
all is stopped. On a timeout, a flood or an interruption (Ctrl-C) the whole group is killed. In a
sandbox, whatever the command started ends with it (its PID namespace ends); unsandboxed, a group
still alive when the command returns (its background children) is killed when the session ends
(``procs.ProcessGroups``). ADR 0122.
"""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
import threading
import time
from dataclasses import replace
from typing import Any

from nodwyn.agent.sandbox import Sandbox, SandboxError, spawn, tidy, unavailable
from nodwyn.agent.tools.base import Outcome, ToolContext, declined, fail, tool
from nodwyn.agent.tools.env import scrub_env
from nodwyn.agent.tools.procs import ProcessGroups, group_alive, kill_group
from nodwyn.errors import ToolError

MAX_OUTPUT = 256 * 1024  # bytes kept (head and tail) of a command's output
MAX_STREAM = 64 * 1024 * 1024  # bytes a command may write in all before it is stopped
_SETTLE = 0.2  # seconds to wait for the last output once the shell itself has exited
_FALLBACK_GROUPS = ProcessGroups()  # for contexts made without a session's registry


class _Output:
    """A command's output as it streams: the first and the last MAX_OUTPUT/2 bytes and a count."""

    def __init__(self) -> None:
        self.half = MAX_OUTPUT // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.lock = threading.Lock()
        self.done = threading.Event()  # the pipe reached its end (every writer closed it)
        self.flooded = threading.Event()
        self.keep = True  # False once the tool has answered: later output is drained and dropped

    def feed(self, chunk: bytes) -> None:
        with self.lock:
            self.total += len(chunk)
            if not self.keep:
                return
            room = self.half - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail += chunk
                if len(self.tail) > self.half:
                    del self.tail[: len(self.tail) - self.half]

    def text(self) -> str:
        with self.lock:
            self.keep = False
            if self.total <= MAX_OUTPUT:
                return (bytes(self.head) + bytes(self.tail)).decode("utf-8", errors="replace")
            head = bytes(self.head).decode("utf-8", errors="replace")
            tail = bytes(self.tail).decode("utf-8", errors="replace")
            return f"{head}\n[{self.total - len(self.head) - len(self.tail)} bytes of output omitted]\n{tail}"


def _drain(fd: int, out: _Output, pgid: int) -> None:
    """Read the pipe to its end; stop the group once it has written more than MAX_STREAM."""
    try:
        while chunk := os.read(fd, 65536):
            out.feed(chunk)
            if out.total > MAX_STREAM and not out.flooded.is_set():
                out.flooded.set()
                kill_group(pgid)
    except OSError:
        pass
    finally:
        os.close(fd)
        out.done.set()


def capped_timeout(asked: Any, cap: float) -> float:
    """The model's timeout within [1 s, cap]; one that is not a finite number gets the cap.
    The comparisons are written so that a NaN on either side can never lift the cap (ADR 0143)."""
    if not math.isfinite(cap) or cap <= 0:
        raise ToolError(f"shell: the configured timeout {cap!r} is not a positive number of seconds")
    try:
        value = float(asked)
    except (TypeError, ValueError, OverflowError):
        return cap
    if not math.isfinite(value) or value >= cap:
        return cap
    return min(cap, max(1.0, value))


def _shell(args: dict[str, Any], ctx: ToolContext) -> Outcome:
    command: str = args["command"]
    if not command.strip():
        return fail("shell: command is empty")
    if "\x00" in command:  # exec refuses it (ValueError): one clear error, not a traceback
        return fail("shell: the command holds a NUL character, which no shell can run; remove it")
    timeout = capped_timeout(args.get("timeout"), ctx.shell_timeout)
    box = ctx.sandbox
    why = unavailable(box)
    if why is not None:  # said before asking: an approval for a command that cannot run is no use
        return Outcome(text=f"shell: {why}", error=True, sandbox=box.mode)
    if not ctx.approve("shell", command):
        return replace(declined("shell", f"run: {command}"), sandbox=box.mode)
    groups: ProcessGroups = ctx.processes if ctx.processes is not None else _FALLBACK_GROUPS
    env = ctx.env if ctx.env is not None else scrub_env(os.environ)
    read_fd, write_fd = os.pipe()
    try:
        proc = spawn(
            box,
            ["/bin/sh", "-c", command],
            workspace=ctx.workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=write_fd,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except SandboxError as exc:
        os.close(read_fd)
        return Outcome(text=f"shell: {exc}", error=True, sandbox=box.mode)
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    pgid = proc.pid  # the group of a new session has the leader's id
    groups.keep(pgid)
    out = _Output()
    threading.Thread(target=_drain, args=(read_fd, out, pgid), name=f"shell-{pgid}", daemon=True).start()
    timed_out = False
    try:
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(pgid)
            code = proc.wait()
        out.done.wait(_SETTLE)  # the last output; background children may hold the pipe open
    except BaseException:  # Ctrl-C (KeyboardInterrupt) or the session ending: nothing survives it
        kill_group(pgid)
        with contextlib.suppress(Exception):
            proc.wait(1)
        groups.forget(pgid)
        raise
    finally:
        tidy()
    if timed_out or out.flooded.is_set() or not _still_running(pgid):
        if timed_out or out.flooded.is_set():
            kill_group(pgid)
        groups.forget(pgid)
    text = out.text().replace(f"{ctx.workspace}{os.sep}", "") + _ending(out, timed_out, timeout, code, box)
    return Outcome(text=text, error=timed_out or out.flooded.is_set() or code != 0, sandbox=box.mode)


def _ending(out: _Output, timed_out: bool, timeout: float, code: int, box: Sandbox) -> str:
    """The line after a command's output: why it stopped. Paths inside the workspace are shown
    relative to it above, as the tools take them (ADR 0442): a traceback's absolute paths cost a
    small model more to read than the error itself."""
    if out.flooded.is_set():
        return (
            f"[stopped: the command wrote more than {MAX_STREAM // (1024 * 1024)} MiB of output; "
            "send it to a file and read a range]"
        )
    if timed_out:
        return f"[timed out after {timeout:g} s; the command was killed]"
    return f"[exit {code}{confinement(box) if code != 0 else ''}]"


def confinement(box: Sandbox) -> str:
    """What a failed command was confined to, said after its exit status so that a command that
    needed the network or a write elsewhere is understood (and the person knows how to allow it)."""
    if not box.confined:
        return ""
    where = "the workspace and /tmp" if box.mode == "workspace-write" else "/tmp only"
    net = "" if box.network else "; no network ([tools] network = true in config.toml allows it)"
    return f"; sandbox {box.mode}: writable {where}{net}"


def _still_running(pgid: int) -> bool:
    """Whether something the command started is still running (it stays in the session's list)."""
    deadline = time.monotonic() + 0.05
    while time.monotonic() < deadline:
        if not group_alive(pgid):
            return False
        time.sleep(0.01)
    return group_alive(pgid)


SHELL = tool(
    "shell",
    "Run a shell command in the workspace; returns its output and exit status.",
    {
        "command": {"type": "string"},
        "timeout": {"type": "integer", "description": "seconds (capped by the configuration)"},
    },
    ["command"],
    _shell,
    mutating=True,
)
