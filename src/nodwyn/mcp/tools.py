"""The listed tools of the session's servers as catalog tools: ``mcp__SERVER__TOOL``.

Made once, before the first message, from what each server listed at start (``Started``): the spec
is the tool's name under its server, its description and its canonical schema; the recipe records
the specs, so replay needs no server. A tool whose schema is not JSON Schema, or whose name clashes
with another once made a catalog name, is left out with a line naming the server. A call checks its
arguments against the server's whole schema, asks the person as a write does (unless the entry says
``approve = "auto"`` or lists the tool), and never raises: every fault is an error result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from nodwyn.agent import Outcome, Tool, ToolContext, fail
from nodwyn.errors import ToolError
from nodwyn.mcp.client import Hub, Started
from nodwyn.mcp.config import ServerConfig
from nodwyn.mcp.names import tool_name
from nodwyn.mcp.results import outcome_of
from nodwyn.mcp.schema import canonical_schema, check_arguments, check_schema
from nodwyn.values.request import ToolSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class Made:
    """The catalog tools of every server, and the lines about what was left out."""

    tools: Mapping[str, Tool]
    messages: tuple[str, ...]


def make_tools(hub: Hub, started: Sequence[Started], *, tool_timeout: float, taken: set[str]) -> Made:
    """``taken``: the names already in the catalog (built-ins, extension tools)."""
    tools: dict[str, Tool] = {}
    messages: list[str] = []
    for s in started:
        if s.error is not None:
            messages.append(f"{s.error}; the session goes on without its tools")
            continue
        origins: dict[str, str] = {}
        for listed in sorted(s.tools, key=lambda t: t.name):
            name = tool_name(s.server.name, listed.name)
            where = f"mcp server {s.server.name}: tool {listed.name!r}"
            if name in taken or name in tools:
                other = origins.get(name, "a tool already in the catalog")
                messages.append(f"{where} left out: its name {name} clashes with {other!r}")
                continue
            try:
                schema = check_schema(listed.input_schema, where)
            except ToolError as exc:
                messages.append(f"{exc}; the tool is left out")
                continue
            shown, dropped = canonical_schema(schema)
            if dropped:
                messages.append(
                    f"{where}: schema keywords with fractional numbers not shown: {', '.join(dropped)}"
                )
            description = listed.description or listed.title or listed.name
            spec = ToolSpec(name=name, description=description, parameters=shown)
            timeout = s.server.timeout or tool_timeout
            tools[name] = Tool(spec=spec, run=_runner(hub, s.server, listed, schema, timeout), mutating=True)
            origins[name] = listed.name
    return Made(tools=tools, messages=tuple(messages))


def _runner(
    hub: Hub, server: ServerConfig, listed: types.Tool, schema: dict[str, Any], timeout: float
) -> Any:
    name = tool_name(server.name, listed.name)

    def run(args: dict[str, Any], ctx: ToolContext) -> Outcome:
        check_arguments(schema, args, name)
        if server.asks(listed.name):
            shown = json.dumps(args, ensure_ascii=False)[:300]
            if not ctx.approve(name, f"call {listed.name} on mcp server {server.name} with {shown}"):
                return fail(
                    f"declined: {name} was not approved (answer yes when asked, run with --yes, or set "
                    f'approve = "auto" or approve = ["{listed.name}"] in [mcp.{server.name}])'
                )
        result = hub.call(server.name, listed.name, args, timeout=timeout, on_progress=hub.on_progress)
        return outcome_of(result, hub.store)

    return run
