"""What a tool is: a model-facing spec plus a function run against the session's tool context."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodwyn.agent.sandbox import Sandbox
from nodwyn.agent.tools.procs import ProcessGroups
from nodwyn.agent.tools.protect import NOTHING, Protected
from nodwyn.log import NO_KNOWN, Known
from nodwyn.values.events import FileRange, ImageRef
from nodwyn.values.request import ToolSpec

if TYPE_CHECKING:
    from nodwyn.agent.tools.view import ViewCache

# Rough bytes per token the window's estimate assumes for text (bytes/3).
BYTES_PER_TOKEN = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """A tool's answer to the model. ``error`` results are still answers: the session goes on."""

    text: str
    error: bool = False
    range: FileRange | None = None  # fs-read: the file lines shown
    plan: str | None = None  # plan-write: the plan to record as gate.plan
    sandbox: str | None = None  # shell: the sandbox mode it ran (or would have run) under
    images: tuple[ImageRef, ...] = ()  # images it returned (an MCP tool's), already in the attachments


Approver = Callable[[str, str], bool]  # (tool name, what it will do) -> allowed
Recaller = Callable[[int], str]  # seq -> the full text of that log entry


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    workspace: Path
    read_budget_tokens: int  # a ranged fs-read stops within this (the window's read cap, as sized now)
    approve: Approver
    shell_timeout: float = 30.0
    recall: Recaller | None = None
    max_file_bytes: int = 4 * 1024 * 1024  # a whole-file read larger than this must use a range
    tool_timeout: float = 60.0  # every tool but shell (which has shell_timeout) stops within this
    env: Mapping[str, str] | None = None  # the shell's environment, scrubbed of credentials
    processes: ProcessGroups | None = None  # the shell's groups still running: killed at the end
    known: Known = NO_KNOWN  # held credential values: the file tools see files with them redacted
    protected: Protected = NOTHING  # nodwyn's own files, which no file tool touches (and .nodwyn)
    views: ViewCache | None = None  # files' redacted views made so far (None: made each time)
    sandbox: Sandbox = Sandbox()  # what the shell's commands may touch (agent.sandbox)


Run = Callable[[dict[str, Any], ToolContext], Outcome]


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    spec: ToolSpec
    run: Run = field(compare=False)
    mutating: bool = False  # asks for approval unless allowed


def tool(
    name: str,
    description: str,
    props: dict[str, Any],
    required: list[str],
    run: Run,
    *,
    mutating: bool = False,
) -> Tool:
    """A built-in tool, whose arguments are an object of ``props`` and nothing else."""
    parameters = {"type": "object", "properties": props, "required": required, "additionalProperties": False}
    spec = ToolSpec(name=name, description=description, parameters=parameters)
    return Tool(spec=spec, run=run, mutating=mutating)


SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte of a file name that is not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def escaped(text: str) -> str:
    """``text`` with every lone surrogate written as an escape: a file name that is not UTF-8
    (``b"\\xff"`` reads as ``"\\udcff"``) shows as ``\\xff``, so an answer is always text the log
    can hold."""
    return SURROGATE.sub(_escape, text)


def fail(text: str) -> Outcome:
    return Outcome(text=text, error=True)


def declined(tool: str, what: str) -> Outcome:
    """A write or command that was not approved: the model is told, the person how to allow it."""
    return fail(
        f"declined: {tool} was not approved to {what} (answer yes when asked, run with --yes, "
        f"or list {tool} in [tools] approve in config.toml)"
    )
