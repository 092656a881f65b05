"""Tools that act on the session rather than the workspace: plan-write, recall, sub-agent.

``sub-agent`` is run by the turn loop (it opens a context of its own); its spec lives here so the
catalog is one list.
"""

from __future__ import annotations

from typing import Any

from nodwyn.agent.tools.base import Outcome, ToolContext, fail, tool
from nodwyn.agent.tools.fs import parse_lines
from nodwyn.errors import ToolError

SUB_AGENT = "sub-agent"


def _plan(args: dict[str, Any], ctx: ToolContext) -> Outcome:
    plan = args["plan"].strip()
    if not plan:
        return fail("plan-write: the plan is empty; write the steps you will take")
    return Outcome(text="plan recorded", plan=plan)


def _recall(args: dict[str, Any], ctx: ToolContext) -> Outcome:
    if ctx.recall is None:
        return fail("recall is not available in this context")
    seq = args["seq"]
    text = ctx.recall(seq)
    lines = text.splitlines(keepends=True)
    if "lines" not in args:
        return Outcome(text=f"[seq {seq}]\n{text}")
    start, end = parse_lines(str(args["lines"]))
    if start > len(lines):
        raise ToolError(f"recall: seq {seq} has {len(lines)} lines; lines {start}- is past its end")
    end = min(end or len(lines), len(lines))
    return Outcome(
        text=f"[seq {seq} lines {start}-{end} of {len(lines)}]\n" + "".join(lines[start - 1 : end])
    )


def _not_here(args: dict[str, Any], ctx: ToolContext) -> Outcome:
    return fail("sub-agent is run by the turn loop; it is not available in this context")


META_TOOLS = (
    tool(
        "plan-write",
        "Record the plan for this task: the steps you will take. It stays in the conversation.",
        {"plan": {"type": "string"}},
        ["plan"],
        _plan,
    ),
    tool(
        "recall",
        "Bring back an entry the window elided ([elided seq=N]) or lines a cut left out, "
        'by its seq and an optional 1-based line range "A-B".',
        {"seq": {"type": "integer"}, "lines": {"type": "string"}},
        ["seq"],
        _recall,
    ),
    tool(
        SUB_AGENT,
        "Hand a self-contained task to a sub-agent in a fresh context with only the named tools "
        '(e.g. ["fs-read"]); its final answer comes back as this call\'s result.',
        {"task": {"type": "string"}, "tools": {"type": "array", "items": {"type": "string"}}},
        ["task"],
        _not_here,
    ),
)
