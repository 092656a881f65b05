"""One run of an eval, on whatever process executes it (a local thread's child, a Ray task).

``execute(job)`` copies the task's workspace fresh, runs the ordinary ``nodwyn run`` in a child
process writing to the attempt's own store (``NODWYN_HOME`` = ``<attempt>/home``), then the task's
check in the workspace with the answer in ``$NODWYN_ANSWER``, and returns what happened. It
decides nothing about counting: the driver verifies and gathers (``gather.py``).

A session killed by a signal (its worker died) raises ``WorkerDied`` so the engine retries it;
a session past its timeout is ended (SIGTERM, which ends a session cleanly, then SIGKILL) and
comes back as unsolved with the reason ``timeout``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import orjson

from nodwyn.errors import NodwynError
from nodwyn.evals.plan import RunKey
from nodwyn.evals.spec import VARIANT_KEYS, Task, Variant

GRACE = 5.0  # seconds between SIGTERM and SIGKILL for a session past its timeout


class WorkerDied(NodwynError):
    """The run's session process was killed by a signal (not by us): the engine retries it once."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    key: RunKey
    task: Task
    variant: Variant
    folder: Path  # this run's own folder on the worker (attempts under it)
    env: tuple[tuple[str, str], ...]  # the person's environment, NODWYN_HOME replaced per attempt
    nodwyn: tuple[str, ...]  # the command that starts nodwyn


@dataclass(frozen=True, slots=True, kw_only=True)
class Attempt:
    key: RunKey
    home: Path  # the attempt's store root
    session: str | None  # the session id `nodwyn run` reported (None: it reported none)
    solved: bool
    reason: str  # "solved", "check failed (exit N)", "timeout after N s", "session exit N", ...
    answer: str
    attempt: int  # 1, or 2 for the retry of a run whose worker died
    wall_s: float


def _argv(job: Job, workspace: Path) -> list[str]:
    argv = [
        *job.nodwyn,
        "run",
        "--json",
        "--quiet",
        "--yes",
        "--no-project-doc",
        "--workspace",
        str(workspace),
    ]
    for key in VARIANT_KEYS:  # each the `nodwyn run` flag of its name
        if (value := getattr(job.variant, key)) is not None:
            argv += [f"--{key}", value]
    return [*argv, "--", job.task.prompt]


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, GRACE), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _next_attempt(folder: Path) -> int:
    """1 for the first attempt; 2 when an earlier attempt's folder is there (its worker died)."""
    folder.mkdir(parents=True, exist_ok=True)
    done = [p for p in folder.iterdir() if p.name.startswith("attempt-")]
    return len(done) + 1


def execute(job: Job) -> Attempt:
    attempt = _next_attempt(job.folder)
    base = job.folder / f"attempt-{attempt}"
    workspace, home = base / "workspace", base / "home"
    shutil.copytree(job.task.workspace, workspace, symlinks=True)
    env = {**dict(job.env), "NODWYN_HOME": str(home)}
    started = time.monotonic()
    proc = subprocess.Popen(
        _argv(job, workspace),
        env=env,
        cwd=workspace,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own group: a timeout ends the tools it started too
    )
    (base / "pid").write_text(str(proc.pid))
    timed_out = False
    try:
        out, err = proc.communicate(timeout=job.task.timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        timed_out = True
    reply = _reply(out)
    sid, text = reply.get("session"), reply.get("text")
    done = partial(
        Attempt,
        key=job.key,
        home=home,
        session=sid if isinstance(sid, str) else _only_session(home),
        attempt=attempt,
        wall_s=time.monotonic() - started,
    )
    answer = text if isinstance(text, str) else ""
    if timed_out:
        return done(solved=False, reason=f"timeout after {job.task.timeout:g} s", answer="")
    if proc.returncode < 0:
        raise WorkerDied(
            f"run {job.key.label()}: its session process was killed by signal {-proc.returncode}"
        )
    if proc.returncode != 0:
        last = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
        return done(solved=False, reason=f"session exit {proc.returncode}: {last[0]}", answer=answer)
    check = subprocess.run(
        ["/bin/sh", "-c", job.task.check],
        cwd=workspace,
        env={**dict(job.env), "NODWYN_ANSWER": answer},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=job.task.timeout,
        check=False,
    )
    reason = "solved" if check.returncode == 0 else f"check failed (exit {check.returncode})"
    return done(solved=check.returncode == 0, reason=reason, answer=answer)


def _reply(out: bytes) -> dict[str, object]:
    try:
        value = orjson.loads(out)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _only_session(home: Path) -> str | None:
    folder = home / "sessions"
    found = [p.name for p in folder.iterdir()] if folder.is_dir() else []
    return found[0] if len(found) == 1 else None


def nodwyn_command() -> tuple[str, ...]:
    """How a child starts this nodwyn: the script beside the interpreter running now."""
    return (str(Path(sys.executable).parent / "nodwyn"),)
