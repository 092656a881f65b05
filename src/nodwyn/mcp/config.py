"""``[mcp.NAME]`` entries: what server to start or reach, and how its tools are approved.

Read from the person's config.toml and, in a trusted workspace, from ``.nodwyn/mcp.toml`` (whose
entries are tables at the top: ``[NAME]`` or ``[mcp.NAME]``). A stdio server has ``command``
(``args``, ``env``, ``pass_env``, ``cwd``); a streamable-HTTP one has ``url`` (``headers``,
``credential``: a credential bound to the URL's origin). ``enabled = false`` keeps an entry
without starting it. ``approve = "ask"`` (the default: each call asks, as a write does), ``"auto"``,
or a list of the server's tool names that run without asking. ``timeout`` bounds one call,
``start_timeout`` the start (spawn, ``initialize`` and every page of ``tools/list``).

A stdio server runs in the session's sandbox (``[tools] sandbox``/``--sandbox``, ADR 0420): the
workspace readable, writable as the mode allows, the network as ``[tools] network`` says.
``sandbox = "off" | "read-only" | "workspace-write"`` and ``network = true | false`` in the
person's config.toml override that for one server; a workspace's ``.nodwyn/mcp.toml`` may not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from nodwyn.agent import MODES, Mode
from nodwyn.errors import ConfigError

NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
DEFAULT_START_TIMEOUT = 30.0
_STDIO_KEYS = ("command", "args", "env", "pass_env", "cwd", "sandbox", "network")
_HTTP_KEYS = ("url", "headers", "credential")
KEYS = frozenset({*_STDIO_KEYS, *_HTTP_KEYS, "enabled", "approve", "timeout", "start_timeout"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerConfig:
    """One ``[mcp.NAME]`` entry. ``where`` is the file and table it came from (for messages)."""

    name: str
    where: str
    transport: Literal["stdio", "http"]
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    pass_env: tuple[str, ...] = ()  # variables of nodwyn's own environment the server also gets
    cwd: Path | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    credential: str | None = None
    enabled: bool = True
    approve: Literal["ask", "auto"] = "ask"
    auto_tools: frozenset[str] = frozenset()  # the server's own tool names that run without asking
    timeout: float | None = None  # None: [tools] tool_timeout
    start_timeout: float = DEFAULT_START_TIMEOUT
    sandbox: Mode | None = None  # None: the session's mode
    network: bool | None = None  # None: the session's sandbox network setting

    def asks(self, tool: str) -> bool:
        """Whether a call of the server's ``tool`` asks the person first."""
        return self.approve == "ask" and tool not in self.auto_tools


def _strs(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings")
    return tuple(value)


def _table(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigError(f'{where} must be a table of strings, like {{ NAME = "value" }}')
    return dict(value)


def _seconds(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 86400:
        raise ConfigError(f"{where} must be a number of seconds, above 0 and at most 86400")
    return float(value)


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false")
    return value


def _text(value: Any, error: str) -> str:
    """``value`` if it is a string that is not empty, else ``error`` raised."""
    if not isinstance(value, str) or not value:
        raise ConfigError(error)
    return value


def _refuse(table: Mapping[str, Any], keys: tuple[str, ...], where: str, why: str) -> None:
    """Refuse the first of ``keys`` that ``table`` has, saying ``why``."""
    for key in keys:
        if key in table:
            raise ConfigError(f"{where}: {key} {why}")


def server_from_table(
    name: str, table: Mapping[str, Any], source: Path, *, base: Path | None = None
) -> ServerConfig:
    """One entry, checked: every problem is one line naming the file, the table and the key.
    ``base``: where a relative ``cwd`` is from (the workspace, for ``.nodwyn/mcp.toml``)."""
    where = f"{source} [mcp.{name}]"
    if not NAME_RE.match(name):
        raise ConfigError(
            f"{source}: [mcp.{name}]: a server name is a letter then up to 31 letters, digits, _ or -; "
            "it becomes part of its tools' names (mcp__NAME__TOOL)"
        )
    if "__" in name:
        raise ConfigError(f"{where}: a server name may not hold '__' (it separates mcp__NAME__TOOL)")
    unknown = sorted(set(table) - KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; known keys are {', '.join(sorted(KEYS))}")
    has_cmd, has_url = "command" in table, "url" in table
    if has_cmd == has_url:
        raise ConfigError(
            f"{where}: give either command (a stdio server) or url (a streamable-HTTP server), not "
            + ("both" if has_cmd else "neither")
        )
    enabled = _flag(table.get("enabled", True), f"{where} enabled")
    approve = table.get("approve", "ask")
    if approve not in ("ask", "auto") and not isinstance(approve, list):
        raise ConfigError(f'{where} approve must be "ask", "auto" or a list of the server\'s tool names')
    auto_tools = frozenset(_strs(approve, f"{where} approve")) if isinstance(approve, list) else frozenset()
    timeout = None if "timeout" not in table else _seconds(table["timeout"], f"{where} timeout")
    start = _seconds(table.get("start_timeout", DEFAULT_START_TIMEOUT), f"{where} start_timeout")
    common: dict[str, Any] = {
        "name": name,
        "where": where,
        "enabled": enabled,
        "approve": "auto" if approve == "auto" else "ask",
        "auto_tools": auto_tools,
        "timeout": timeout,
        "start_timeout": start,
    }
    if base is not None:
        only_mine = "may be set for a server in your config.toml only, not in a workspace's file"
        _refuse(table, ("sandbox", "network"), where, f"{only_mine}; add it to [mcp.{name}] in config.toml")
    return _stdio(table, common, base) if has_cmd else _http(table, common)


def _stdio(table: Mapping[str, Any], common: dict[str, Any], base: Path | None) -> ServerConfig:
    """A stdio server's entry: its command, arguments, environment, folder and sandbox."""
    where = common["where"]
    box = table.get("sandbox")
    if box is not None and box not in MODES:
        raise ConfigError(
            f"{where} sandbox must be one of {', '.join(repr(m) for m in MODES)} "
            '(the server\'s own sandbox mode; "off" runs it unconfined, as you)'
        )
    network = None if table.get("network") is None else _flag(table["network"], f"{where} network")
    command = _text(table["command"], f'{where} command must be the program to run, e.g. "npx"')
    _refuse(table, _HTTP_KEYS, where, "is for a url server; a stdio server takes command, args, env")
    cwd = Path(_text(table["cwd"], f"{where} cwd must be a folder")).expanduser() if "cwd" in table else None
    if cwd is not None and base is not None:
        cwd = base / cwd  # a relative cwd is from the workspace (an absolute one stays as it is)
    return ServerConfig(
        transport="stdio",
        command=command,
        args=_strs(table.get("args", []), f"{where} args"),
        env=_table(table.get("env", {}), f"{where} env"),
        pass_env=_strs(table.get("pass_env", []), f"{where} pass_env"),
        cwd=cwd,
        sandbox=box,
        network=network,
        **common,
    )


def _http(table: Mapping[str, Any], common: dict[str, Any]) -> ServerConfig:
    """A streamable-HTTP server's entry: its URL, headers and credential."""
    where = common["where"]
    url = table["url"]
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ConfigError(f'{where} url must be an http(s) URL, e.g. "http://127.0.0.1:8000/mcp"')
    _refuse(table, _STDIO_KEYS, where, "is for a stdio server; a url server takes url, headers, credential")
    credential = table.get("credential")
    if credential is not None:
        _text(credential, f"{where} credential must name an environment variable or keychain entry")
    return ServerConfig(
        transport="http",
        url=url,
        headers=_table(table.get("headers", {}), f"{where} headers"),
        credential=credential,
        **common,
    )


def servers_from(raw: object, source: Path, *, base: Path | None = None) -> dict[str, ServerConfig]:
    """The ``[mcp]`` table of a file: ``{NAME: table}``."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: [mcp] must hold tables like [mcp.NAME]")
    found: dict[str, ServerConfig] = {}
    for name, table in raw.items():
        if not isinstance(table, Mapping):
            raise ConfigError(f"{source}: mcp.{name} must be a table ([mcp.{name}])")
        found[name] = server_from_table(name, table, source, base=base)
    return found
