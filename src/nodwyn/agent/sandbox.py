"""The OS sandbox a command runs in: one value (``Sandbox``) and one entry point (``spawn``).

On Linux a sandboxed command runs under bubblewrap (``bwrap``, Debian's ``bubblewrap``) in new user,
PID, IPC, UTS and network namespaces, in a session of its own, with no capabilities, no new
privileges (``bwrap`` always sets ``PR_SET_NO_NEW_PRIVS``, so a setuid binary gains nothing), no
further user namespaces, ``--die-with-parent``, a private ``/proc`` (only the sandbox's processes),
a minimal ``/dev`` and a private ``/tmp``. When the command ends, the PID namespace's first process
ends and the kernel kills everything left in it: a ``setsid`` or double-forked child does not
outlive the call. A seccomp filter (x86-64 and aarch64) adds what the namespaces leave: it refuses
``socket(AF_UNIX)`` without the network (a filesystem socket is reachable across network
namespaces), io_uring (its operations bypass seccomp), and every syscall of another ABI (x32,
i386), so that none of them can be used to go around it. ADR 0350.

Modes (ADR 0351):
- ``workspace-write`` (the default): the filesystem read-only, the workspace and ``/tmp``
  writable; the workspace's ``.git`` (unless ``git_writable``) and ``.nodwyn`` read-only; every
  path in ``hidden`` (nodwyn's config dir, keychain and data dir, the person's credential stores)
  replaced by an empty one; no network unless ``network``.
- ``read-only``: nothing writable but ``/tmp``; no network unless ``network``.
- ``off``: the command runs as the person, unconfined.

``spawn`` never runs a command unconfined in a sandboxed mode: where bwrap is missing or cannot make
namespaces, or the workspace cannot be bound, it raises ``SandboxError`` with one line saying how to
fix it. The shell tool and stdio MCP servers (``mcp.launch``) start processes through it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import shutil
import struct
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, get_args

from nodwyn.errors import ToolError

Mode = Literal["workspace-write", "read-only", "off"]
MODES: Final[tuple[str, ...]] = get_args(Mode)
DEFAULT_MODE: Final[Mode] = "workspace-write"
PROTECTED: Final = (".nodwyn", ".git")  # read-only in the workspace (.git if there, unless git_writable)
FIX = 'install bubblewrap (apt-get install bubblewrap) or set [tools] sandbox = "off" in config.toml'


class SandboxError(ToolError):
    """The sandbox cannot run a command here; the message says how to fix it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Sandbox:
    """What a sandboxed command may touch. ``hidden``: paths replaced by an empty file or folder;
    ``program``: the bwrap to run (None: not found, so a sandboxed mode refuses to run)."""

    mode: Mode = DEFAULT_MODE
    network: bool = False
    git_writable: bool = False
    hidden: tuple[Path, ...] = ()
    program: str | None = "/usr/bin/bwrap"
    readable: tuple[Path, ...] = ()  # folders under /tmp bound read-only again over the private /tmp

    @property
    def confined(self) -> bool:
        return self.mode != "off"

    def describe(self) -> str:
        """One phrase for people and logs: ``workspace-write, no network`` or ``off (unsandboxed)``."""
        if not self.confined:
            return "off (unsandboxed)"
        return f"{self.mode}, {'network on' if self.network else 'no network'}"


def find_bwrap(path: str | None) -> str | None:
    """The bwrap on ``path`` (a PATH value), or None."""
    return shutil.which("bwrap", path=path)


@functools.lru_cache(maxsize=8)
def _probe(program: str) -> str | None:
    """Whether ``program`` can make the namespaces here: None, or what it said when it could not."""
    try:
        done = subprocess.run(
            [program, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{exc.__class__.__name__}: {exc}"
    if done.returncode == 0:
        return None
    said = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
    return said[-1] if said else f"exit {done.returncode}"


def unavailable(sandbox: Sandbox) -> str | None:
    """Why ``sandbox`` cannot run commands here (one line with the fix), or None when it can."""
    if not sandbox.confined:
        return None
    if platform.system() != "Linux":
        return (
            f"the sandbox needs Linux namespaces (bubblewrap), not {platform.system()}; "
            'set [tools] sandbox = "off"'
        )
    if sandbox.program is None:
        return f"the sandbox needs bwrap, which is not on PATH: {FIX}"
    said = _probe(sandbox.program)
    if said is None:
        return None
    return (
        f"bwrap cannot make namespaces here ({said}); allow unprivileged user namespaces "
        "(sysctl kernel.unprivileged_userns_clone=1, kernel.apparmor_restrict_unprivileged_userns=0, "
        'or a container run with user namespaces allowed), or set [tools] sandbox = "off" in config.toml'
    )


def _checked_workspace(workspace: Path) -> Path:
    text = str(workspace)
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise SandboxError(
            f"the sandbox cannot bind the workspace {text!r}: its path holds a control character "
            "(a newline?); rename the folder"
        )
    if not workspace.is_dir():
        raise SandboxError(
            f"the sandbox cannot bind the workspace {text!r}: it is not a folder; pass --workspace DIR"
        )
    return workspace.resolve()


def bwrap_argv(
    sandbox: Sandbox, ws: Path, argv: Sequence[str], seccomp_fd: int | None, cwd: Path | None = None
) -> list[str]:
    """The bwrap command line that runs ``argv`` in the workspace ``ws`` (checked and resolved by
    ``_checked_workspace``) under ``sandbox`` (in ``cwd``, the workspace unless given)."""
    assert sandbox.program is not None
    out = [sandbox.program, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    out += ["--die-with-parent", "--new-session", "--disable-userns"]  # no cgroup namespace: 10 ms
    out += ["--cap-drop", "ALL"]
    if not sandbox.network:
        out.append("--unshare-net")
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for folder in sandbox.readable:  # before the workspace's bind, which may lie inside one
        out += ["--ro-bind", str(folder), str(folder)]
    if sandbox.mode == "read-only":  # bound again: a workspace under /tmp is under the private tmpfs
        out += ["--ro-bind", str(ws), str(ws)]
    if sandbox.mode == "workspace-write":
        out += ["--bind", str(ws), str(ws)]
        for name in PROTECTED:
            if name == ".git" and sandbox.git_writable:
                continue
            inner = ws / name
            if inner.exists() or inner.is_symlink():  # a missing .nodwyn was made by spawn
                out += ["--ro-bind", str(inner), str(inner)]
    for path in sandbox.hidden:
        out += _hide(path, ws)
    if seccomp_fd is not None:
        out += ["--seccomp", str(seccomp_fd)]
    out += ["--chdir", str(ws if cwd is None else cwd), "--", *argv]
    return out


def _hide(path: Path, workspace: Path) -> list[str]:
    """bwrap arguments that put an empty folder (or /dev/null) over ``path``, if it exists; a path
    that holds the workspace is left alone (hiding it would hide the workspace)."""
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return []
    if real == workspace or real in workspace.parents:
        return []
    if real.is_dir():
        return ["--tmpfs", str(real), "--remount-ro", str(real)]
    return ["--ro-bind", "/dev/null", str(real)]


# -- the seccomp filter (classic BPF over struct seccomp_data) ------------------------------------

_LD_W_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_EPERM = 1
_AF_UNIX = 1
# arch: (AUDIT_ARCH value, socket nr, io_uring_setup/enter/register nrs, first foreign nr or None)
_ARCHES: Final = {
    "x86_64": (0xC000003E, 41, (425, 426, 427), 0x40000000),
    "aarch64": (0xC00000B7, 198, (425, 426, 427), None),
}


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def seccomp_program(network: bool, machine: str | None = None) -> bytes | None:
    """The filter for this machine's ABI, or None on one it has no numbers for (the namespaces
    still hold; ``describe`` in the ADR says so)."""
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit, socket_nr, uring, foreign = arch
    deny = _ERRNO | _EPERM
    body: list[bytes] = []
    body.append(_insn(_LD_W_ABS, 0, 0, 4))  # arch
    body.append(_insn(_JEQ, 1, 0, audit))
    body.append(_insn(_RET, 0, 0, deny))  # another ABI (i386 on x86-64): refused
    body.append(_insn(_LD_W_ABS, 0, 0, 0))  # syscall nr
    if foreign is not None:
        body.append(_insn(_JGE, 0, 1, foreign))
        body.append(_insn(_RET, 0, 0, deny))  # x32
    for nr in uring:
        body.append(_insn(_JEQ, 0, 1, nr))
        body.append(_insn(_RET, 0, 0, deny))
    if not network:
        body.append(_insn(_JEQ, 0, 3, socket_nr))
        body.append(_insn(_LD_W_ABS, 0, 0, 16))  # args[0], low word (little-endian)
        body.append(_insn(_JEQ, 0, 1, _AF_UNIX))
        body.append(_insn(_RET, 0, 0, deny))
    body.append(_insn(_RET, 0, 0, _ALLOW))
    return b"".join(body)


def spawn(
    sandbox: Sandbox,
    argv: Sequence[str],
    *,
    workspace: Path,
    env: Mapping[str, str],
    cwd: Path | None = None,
    **popen: Any,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in ``workspace`` under ``sandbox`` (the one way nodwyn starts a tool's process:
    the shell's commands and stdio MCP servers), in ``cwd`` (default: the workspace).
    ``popen``: stdin/stdout/stderr/start_new_session as for ``subprocess.Popen``. Raises
    ``SandboxError`` (one line with the fix) rather than run a sandboxed mode's command unconfined."""
    if not sandbox.confined:
        return subprocess.Popen(list(argv), cwd=workspace if cwd is None else cwd, env=dict(env), **popen)
    why = unavailable(sandbox)
    if why is not None:
        raise SandboxError(why)
    ws = _checked_workspace(workspace)
    program = seccomp_program(sandbox.network)
    read_fd = None
    with _LOCK:
        _tidy()
        point = _mount_point(ws) if sandbox.mode == "workspace-write" else None
        try:
            if program is not None:
                read_fd, write_fd = os.pipe()
                with os.fdopen(write_fd, "wb") as w:  # a few hundred bytes: within the pipe's buffer
                    w.write(program)
            args = bwrap_argv(sandbox, ws, argv, read_fd, cwd)
            fds = () if read_fd is None else (read_fd,)
            proc = subprocess.Popen(args, env=dict(env), pass_fds=fds, **popen)
        finally:
            if read_fd is not None:
                os.close(read_fd)
        if point is not None:
            _POINTS.setdefault(point, []).append(proc)
        _tidy()
    return proc


# A workspace without ``.nodwyn`` gets an empty one while a command runs, mounted read-only, so the
# command cannot create extension files; it is removed once no command that uses it is running
# (not before: removing a folder mounted in another namespace detaches that mount). ADR 0352.
_POINTS: dict[Path, list[subprocess.Popen[bytes]]] = {}
_LOCK = threading.Lock()


def _mount_point(workspace: Path) -> Path | None:
    path = workspace / ".nodwyn"
    if path in _POINTS:
        return path
    if path.exists() or path.is_symlink():
        return None
    path.mkdir()
    _POINTS[path] = []
    return path


def _tidy() -> None:
    """Remove the empty mount points no running command uses (under ``_LOCK``)."""
    for path, users in list(_POINTS.items()):
        users[:] = [p for p in users if p.poll() is None]
        if users:
            continue
        del _POINTS[path]
        with contextlib.suppress(OSError):  # not empty (or gone): the extension loader judges it
            path.rmdir()


def tidy() -> None:
    """Remove what ``spawn`` made for commands that have ended (the shell tool calls it after each)."""
    with _LOCK:
        _tidy()
