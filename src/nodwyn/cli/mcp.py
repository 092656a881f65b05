"""``nodwyn mcp list`` and ``nodwyn mcp test NAME``: the MCP servers a session would start."""

from __future__ import annotations

import os
from pathlib import Path

import click
import orjson

from nodwyn.cli.screen import shown
from nodwyn.compose import load_config, probe_servers
from nodwyn.errors import ToolError

_WORKSPACE = click.option(
    "--workspace",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="The workspace whose .nodwyn/mcp.toml is read too (default: the current directory).",
)


@click.group()
def mcp() -> None:
    """The [mcp.NAME] servers of config.toml (and a trusted workspace's .nodwyn/mcp.toml)."""


@mcp.command("list")
@_WORKSPACE
@click.option("--json", "as_json", is_flag=True, help="One JSON object per server, one per line.")
def list_servers(workspace: Path | None, as_json: bool) -> None:
    """Start every enabled server as a session would, and show its status and tools."""
    config = load_config(os.environ)
    entries, servers, skipped = probe_servers(config, (workspace or Path.cwd()).resolve(), os.environ)
    try:
        for line in skipped:
            click.echo(shown(line), err=True)
        started = {s.server.name: s for s in servers.started}
        for name, entry in sorted(entries.items()):
            s = started.get(name)
            status = "disabled" if not entry.enabled else ("error" if s is None or s.error else "ok")
            tools = sorted(t for t in servers.tools if t.startswith(f"mcp__{name}__"))
            where = entry.url or " ".join([entry.command or "", *entry.args])
            if as_json:
                doc = {
                    "name": name,
                    "transport": entry.transport,
                    "status": status,
                    "where": where,
                    "version": None if s is None else s.version,
                    "error": None if s is None else s.error,
                    "tools": tools,
                    "approve": entry.approve if not entry.auto_tools else sorted(entry.auto_tools),
                }
                click.echo(orjson.dumps(doc).decode())
                continue
            click.echo(shown(f"{name:<16} {entry.transport:<6} {status:<8} {where}"))
            if s is not None and s.error:
                click.echo(shown(f"    {s.error}"))
            elif s is not None:
                click.echo(shown(f"    {s.version or '?'} · {len(tools)} tools · {s.seconds:.2f} s to start"))
                for tool in tools:
                    click.echo(f"    {tool}")
        for message in servers.messages:
            if "the session goes on without its tools" not in message:
                click.echo(shown(message), err=True)
    finally:
        if servers.hub is not None:
            servers.hub.close()


@mcp.command("test")
@click.argument("name")
@_WORKSPACE
def test(name: str, workspace: Path | None) -> None:
    """Start NAME (even if enabled = false), initialize it and list its tools; exit non-zero if it
    fails, with the reason."""
    config = load_config(os.environ)
    _, servers, _ = probe_servers(config, (workspace or Path.cwd()).resolve(), os.environ, only=name)
    try:
        (s,) = servers.started or (None,)
        if s is None:
            raise ToolError(servers.messages[0] if servers.messages else f"mcp server {name} did not start")
        if s.error:
            raise ToolError(s.error)
        tools = sorted(t for t in servers.tools if t.startswith(f"mcp__{name}__"))
        click.echo(
            shown(f"{name}: ok · {s.version or '?'} · {len(tools)} tools · {s.seconds:.2f} s to start")
        )
        for message in servers.messages:
            click.echo(shown(f"  {message}"))
        for tool in tools:
            click.echo(f"  {tool}")
    finally:
        if servers.hub is not None:
            servers.hub.close()
