"""The one place a stdio server's command line and environment are made (ADR 0361).

A sandbox runner wraps a server here and nowhere else: ``stdio_command`` returns what is spawned,
so putting ``bwrap ... --`` in front of it is a change to this function alone.
"""

from __future__ import annotations

from collections.abc import Mapping

from mcp.client.stdio import StdioServerParameters

from nodwyn.mcp.config import ServerConfig

# What a server gets of nodwyn's environment besides its entry's env and pass_env: enough to find
# and run its program, nothing that could hold a credential.
INHERITED = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")


def server_env(server: ServerConfig, env: Mapping[str, str]) -> dict[str, str]:
    """The server's whole environment: the inherited names, ``pass_env``'s, then ``env``'s."""
    out = {k: env[k] for k in INHERITED if k in env}
    out.update({k: env[k] for k in server.pass_env if k in env})
    out.update(server.env)
    return out


def stdio_command(server: ServerConfig, env: Mapping[str, str]) -> StdioServerParameters:
    """What to spawn for a stdio server: its command, arguments, environment and folder."""
    if server.command is None:
        raise ValueError(f"{server.where}: not a stdio server")
    return StdioServerParameters(
        command=server.command,
        args=list(server.args),
        env=server_env(server, env),
        cwd=server.cwd,
    )
