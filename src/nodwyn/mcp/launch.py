"""The one place a stdio server's command line, environment and sandbox are made (ADR 0361, 0420).

``stdio_command`` returns what is spawned: the program (found on the server's PATH before anything
runs, so a missing one is the same line in every mode), its arguments, environment and folder, and
the sandbox it runs in: the session's, or the mode and network its ``[mcp.NAME]`` entry gives.
``stdio.stdio_transport`` starts it through ``agent.sandbox.spawn``, as the shell's commands are.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from nodwyn.agent import Sandbox
from nodwyn.mcp.config import ServerConfig

# What a server gets of nodwyn's environment besides its entry's env and pass_env: enough to find
# and run its program, nothing that could hold a credential.
INHERITED = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")
UNCONFINED = Sandbox(mode="off")


@dataclass(frozen=True, slots=True, kw_only=True)
class Launch:
    """A stdio server as spawned: ``argv[0]`` is the program's path."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path | None  # None: the workspace
    sandbox: Sandbox
    workspace: Path


def server_env(server: ServerConfig, env: Mapping[str, str]) -> dict[str, str]:
    """The server's whole environment: the inherited names, ``pass_env``'s, then ``env``'s."""
    out = {k: env[k] for k in INHERITED if k in env}
    out.update({k: env[k] for k in server.pass_env if k in env})
    out.update(server.env)
    return out


def own_folders(argv: tuple[str, ...], cwd: Path | None) -> tuple[Path, ...]:
    """The folders under /tmp that hold a stdio server's program, its file arguments or its folder
    (each as its top folder under /tmp: a virtualenv or node_modules next to the file is needed
    too). The sandbox's private /tmp would hide them; they are bound again, read-only (ADR 0422)."""
    out: list[Path] = []
    for text in (*argv, *(() if cwd is None else (str(cwd),))):
        path = Path(os.path.abspath(text)) if os.path.isabs(text) else None
        if path is None or len(path.parts) < 3 or path.parts[1] != "tmp" or not path.exists():
            continue
        top = Path("/tmp", path.parts[2])
        if top not in out:
            out.append(top)
    return tuple(out)


def server_sandbox(server: ServerConfig, session: Sandbox) -> Sandbox:
    """The session's sandbox with the entry's ``sandbox`` and ``network`` over it."""
    box = session if server.sandbox is None else replace(session, mode=server.sandbox)
    return box if server.network is None else replace(box, network=server.network)


def _program(command: str, server: ServerConfig, env: Mapping[str, str]) -> str:
    if os.sep in command:
        path = Path(command) if server.cwd is None or os.path.isabs(command) else server.cwd / command
        found = str(path) if os.access(path, os.X_OK) and path.is_file() else None
    else:
        found = shutil.which(command, path=env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
    return found


def stdio_command(
    server: ServerConfig, env: Mapping[str, str], *, sandbox: Sandbox = UNCONFINED, workspace: Path
) -> Launch:
    """What to spawn for a stdio server, and in what sandbox (``sandbox``: the session's)."""
    if server.command is None:
        raise ValueError(f"{server.where}: not a stdio server")
    whole = server_env(server, env)
    argv = (_program(server.command, server, whole), *server.args)
    box = server_sandbox(server, sandbox)
    if box.confined:
        box = replace(box, readable=own_folders(argv, server.cwd))
    return Launch(argv=argv, env=whole, cwd=server.cwd, sandbox=box, workspace=workspace)
