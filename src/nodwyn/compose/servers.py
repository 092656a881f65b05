"""The session's MCP servers, put together before the first message (ADR 0360).

``[mcp.NAME]`` in config.toml, then a trusted workspace's ``.nodwyn/mcp.toml`` (an untrusted one
is skipped with a message, as extension files are; a name both give is the person's). Enabled
servers start at once; their tools join the catalog (``nodwyn.mcp.tools``). A streamable-HTTP
server's ``credential`` is bound to its URL's origin, as a model's is to its base_url.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nodwyn.agent import Sandbox, Tool
from nodwyn.compose.config import Config
from nodwyn.compose.extensions import trusted_dirs
from nodwyn.errors import ConfigError
from nodwyn.log import Known
from nodwyn.mcp import ServerConfig, servers_from
from nodwyn.transport import Credentials

if TYPE_CHECKING:  # the SDK is imported only when a server starts (it costs 1.5 s at start-up)
    from nodwyn.mcp import Hub, Started

WORKSPACE_FILE = "mcp.toml"


@dataclass(frozen=True, slots=True, kw_only=True)
class Servers:
    """What the session's servers gave: the hub (None when none is enabled), each start, the
    catalog tools and the lines to show."""

    hub: Hub | None
    started: tuple[Started, ...]
    tools: Mapping[str, Tool]
    messages: tuple[str, ...]


def _read_workspace_file(workspace: Path) -> bytes | None:
    """``.nodwyn/mcp.toml``, read without following a link (a link is refused, named)."""
    path = workspace / ".nodwyn" / WORKSPACE_FILE
    try:
        dir_fd = os.open(workspace / ".nodwyn", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fd = os.open(
            WORKSPACE_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd
        )
    except FileNotFoundError:
        return None
    except OSError:
        raise ConfigError(
            f"{path}: is a symlink or cannot be opened; MCP servers load only from a real file"
        ) from None
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise ConfigError(f"{path}: is not a regular file")
        return f.read()


def configured(
    config: Config, workspace: Path, env: Mapping[str, str]
) -> tuple[dict[str, ServerConfig], list[str]]:
    """Every server entry (enabled or not) and the lines about what was skipped."""
    servers = dict(config.mcp)
    messages: list[str] = []
    raw = _read_workspace_file(workspace)
    if raw is None:
        return servers, messages
    path = workspace / ".nodwyn" / WORKSPACE_FILE
    if workspace.resolve() not in trusted_dirs(env):
        messages.append(
            f"skipped {path}: the workspace is not trusted; "
            f"run `nodwyn trust {workspace}` to start its servers"
        )
        return servers, messages
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix the file") from None
    table = doc.get("mcp", doc)
    for name, entry in servers_from(table, path, base=workspace).items():
        if name in servers:
            messages.append(f"{path} [mcp.{name}] is left out: config.toml has a server of that name")
        else:
            servers[name] = entry
    return servers, messages


def http_headers(server: ServerConfig, env: Mapping[str, str], keychain: Credentials) -> dict[str, str]:
    """A URL server's headers: its own, and its credential's (bound to the URL's origin)."""
    headers = dict(server.headers)
    if server.credential is None or server.url is None:
        return headers
    found = Credentials.from_env(env, {server.credential: [server.url]}).merged(keychain)
    if server.credential not in found.by_name:
        raise ConfigError(
            f"{server.where} credential: {server.credential!r} is neither set in the environment nor in "
            f"the keychain; export {server.credential}=... or run `nodwyn keys set {server.credential}`"
        )
    cred = found.get(server.credential)
    cred.check(server.url)  # a keychain entry bound elsewhere is refused before anything is sent
    headers.update(cred.auth_headers())
    return headers


def held(config: Config, env: Mapping[str, str]) -> list[str]:
    """The credential values MCP entries name from the environment (redacted everywhere)."""
    return [env[s.credential] for s in config.mcp.values() if s.credential and env.get(s.credential)]


def start_servers(
    servers: Mapping[str, ServerConfig],
    *,
    env: Mapping[str, str],
    known: Known,
    keychain: Credentials,
    tool_timeout: float,
    taken: set[str],
    sandbox: Sandbox,
    workspace: Path,
) -> Servers:
    """Start the enabled ``servers`` at once (stdio ones in ``sandbox`` over ``workspace``, unless
    an entry says otherwise) and make their catalog tools."""
    enabled = [s for _, s in sorted(servers.items()) if s.enabled]
    if not enabled:
        return Servers(hub=None, started=(), tools={}, messages=())
    messages: list[str] = []
    headers: dict[str, dict[str, str]] = {}
    startable = []
    for s in enabled:
        try:
            if s.transport == "http":
                headers[s.name] = http_headers(s, env, keychain)
            startable.append(s)
        except ConfigError as exc:
            messages.append(f"mcp server {s.name} not started: {exc}")
    from nodwyn.mcp import Hub, make_tools

    hub = Hub(env=env, known=known, sandbox=sandbox, workspace=workspace)
    started = hub.start(startable, headers)
    made = make_tools(hub, started, tool_timeout=tool_timeout, taken=taken)
    return Servers(hub=hub, started=tuple(started), tools=made.tools, messages=(*messages, *made.messages))
