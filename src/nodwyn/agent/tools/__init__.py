"""The tool catalog and the one entry point that runs a call: ``run_call``.

A call never raises into the loop: an unknown tool, bad arguments, a path outside the workspace or a
failing command each come back as an error result with one clear message, and the session goes on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from nodwyn.agent.tools.args import parse_arguments
from nodwyn.agent.tools.base import Approver, Outcome, Recaller, Tool, ToolContext, escaped, fail
from nodwyn.agent.tools.fs import BLOCK_EDIT_TOOLS, FS_TOOLS
from nodwyn.agent.tools.meta import META_TOOLS, SUB_AGENT
from nodwyn.agent.tools.shell import SHELL
from nodwyn.errors import ConfigError, ToolError
from nodwyn.values.content import ToolCall
from nodwyn.values.request import ToolSpec

__all__ = [
    "EDITS",
    "SUB_AGENT",
    "Approver",
    "Outcome",
    "Recaller",
    "Tool",
    "ToolContext",
    "builtin_tools",
    "catalog",
    "run_call",
]


EDITS = ("json", "search", "blocks")


def builtin_tools(edits: str = "json") -> dict[str, Tool]:
    """The built-in tools. ``edits`` (a local prompt format's choice, ADR 0440): ``"json"``, every
    text argument in the call's JSON; ``"search"``, fs-edit's old and new as a SEARCH/REPLACE block
    after the call; ``"blocks"``, that and fs-write's content as a fenced block after the call."""
    tools = {t.spec.name: t for t in (*FS_TOOLS, SHELL, *META_TOOLS)}
    blocked = {"search": ("fs-edit",), "blocks": ("fs-edit", "fs-write")}.get(edits, ())
    tools.update({t.spec.name: t for t in BLOCK_EDIT_TOOLS if t.spec.name in blocked})
    return tools


def catalog(tools: Iterable[Tool]) -> tuple[ToolSpec, ...]:
    """The model-facing catalog, frozen at session start: sorted by name, names unique."""
    specs = sorted((t.spec for t in tools), key=lambda s: s.name)
    for a, b in zip(specs, specs[1:], strict=False):
        if a.name == b.name:
            raise ConfigError(f"two tools are named {a.name!r}; an extension file must pick another name")
    return tuple(specs)


def run_call(
    call: ToolCall, tools: Mapping[str, Tool], ctx: ToolContext, offered: Iterable[str] | None = None
) -> Outcome:
    """Run one tool call. ``offered`` limits the names this context may call (a sub-agent's subset)."""
    allowed = set(tools) if offered is None else set(offered) & set(tools)
    tool = tools.get(call.name)
    try:
        if tool is None or call.name not in allowed:
            out = fail(_unknown(call, allowed))
        else:
            out = tool.run(parse_arguments(tool.spec, call.arguments), ctx)
    except ToolError as exc:
        out = fail(str(exc))
    except (OSError, UnicodeError) as exc:
        out = fail(f"{call.name}: {exc.__class__.__name__}: {exc}")
    except RecursionError:  # a shape no tool should meet (the file tools walk without recursion)
        out = fail(f"{call.name}: what it was given nests too deep to handle; give it a shallower input")
    # lone surrogates (names that are not UTF-8) escaped: always loggable text
    return replace(out, text=escaped(out.text), plan=None if out.plan is None else escaped(out.plan))


def _unknown(call: ToolCall, allowed: set[str]) -> str:
    """Why a call of no tool offered here ran nothing, and what a call looks like."""
    names = ", ".join(sorted(allowed)) or "none"
    shape = 'a call is {"name": TOOL, "arguments": {...}}'
    if call.name:
        return f"unknown tool {call.name!r}, so nothing was run; the tools here are: {names}; {shape}"
    written = call.arguments.strip()
    written = written if len(written) <= 80 else written[:80] + "…"
    return (
        f"the call could not be read: it names no tool ({written!r}), so nothing was run; "
        f"{shape}, TOOL one of: {names}"
    )
