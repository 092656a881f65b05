"""Running the model's tool calls for the loop: the context every call runs in, ``recall`` from
the log, and the ``tool.result`` a call's outcome is logged as. The calls themselves run through
``tools.run_call``, which never raises: bad input comes back to the model as an error result."""

from __future__ import annotations

from collections.abc import Callable
from typing import assert_never

from nodwyn.agent.settings import AgentSettings
from nodwyn.agent.tools import Approver, Outcome, ToolContext
from nodwyn.agent.tools.procs import ProcessGroups
from nodwyn.agent.tools.view import ViewCache
from nodwyn.errors import ToolError
from nodwyn.log import NO_KNOWN, Known, SessionLog
from nodwyn.values.content import ToolCall
from nodwyn.values.events import (
    LLM_RESP,
    TOOL_RESULT,
    Bookkeeping,
    GatePlan,
    LineRange,
    LlmReq,
    LlmResp,
    Note,
    Observed,
    SessionResume,
    SessionStart,
    ToolResult,
    UserMsg,
    decode,
)

READ_MARGIN = 0.85  # a ranged read leaves room for JSON escaping and its header


def tool_context(
    settings: AgentSettings, approve: Approver, recall: Callable[[int], str], known: Known = NO_KNOWN
) -> ToolContext:
    """The session's tool context: a ranged fs-read stops within the window's read cap; the file
    tools see files with the log's held values redacted and never touch nodwyn's own files."""
    recipe = settings.recipe
    cap = recipe.limits.max_result_tokens * (2 if recipe.rules.wide_reads else 1)
    return ToolContext(
        workspace=settings.workspace,
        read_budget_tokens=int(cap * READ_MARGIN),
        approve=approve,
        shell_timeout=settings.shell_timeout,
        recall=recall,
        tool_timeout=settings.tool_timeout,
        env=settings.shell_env,
        processes=ProcessGroups(),
        known=known,
        protected=settings.protected,
        views=ViewCache(),
        sandbox=settings.sandbox,
    )


def recall_text(log: SessionLog, seq: int) -> str:
    """The full text of the log entry ``seq`` (what an elision or a cut left out). A reply comes
    back as its unit: its text, its calls and their results, each result under its own seq; so
    does the request a reply answered, so that any seq inside a run marker ``[elided seq=A..B]``
    that is a reply, a result or a request brings its part of the run back."""
    if not 1 <= seq <= log.last_seq:
        raise ToolError(f"recall: there is no seq {seq} (the log has 1-{log.last_seq})")
    event = next(iter(log.read(seq, seq)))
    p = decode(event)
    match p:
        case ToolResult() | UserMsg() | GatePlan() | Note():
            return p.text
        case LlmResp():
            return _unit(log, event.seq, event.ctx, p)
        case LlmReq():
            reply = next((e for e in log.read(seq + 1) if e.kind == LLM_RESP and e.ctx == event.ctx), None)
            answer = None if reply is None else LlmResp.from_data(reply.data)
            if reply is not None and answer is not None and answer.req == seq:
                return _unit(log, reply.seq, reply.ctx, answer)
            raise ToolError(f"recall: seq {seq} is a request that got no reply; nothing to bring back")
        case SessionStart() | SessionResume() | Bookkeeping() | Observed():
            raise ToolError(f"recall: seq {seq} is a {event.kind} event, which has no text to bring back")
        case _:
            assert_never(p)


def _unit(log: SessionLog, seq: int, ctx: str, reply: LlmResp) -> str:
    """A reply with its calls and their results (until the context's next reply)."""
    calls = reply.response.calls
    text = reply.response.text
    if not calls:
        return text
    lines = [f"[reply seq {seq}]", text] if text else [f"[reply seq {seq}]"]
    lines += [f"[call {c.name} {c.arguments}]" for c in calls]
    ids = {c.id for c in calls}
    for e in log.read(seq + 1):
        if e.ctx != ctx:
            continue
        if e.kind == LLM_RESP:
            break
        if e.kind == TOOL_RESULT:
            result = ToolResult.from_data(e.data)
            if result.call_id in ids:
                lines.append(f"[result seq {e.seq} of {result.name}]")
                lines.append(result.text)
    return "\n".join(lines)


def result_payload(call: ToolCall, outcome: Outcome) -> ToolResult:
    """The ``tool.result`` of ``call``'s outcome."""
    rng = None if outcome.range is None else LineRange(**outcome.range)
    return ToolResult(
        call_id=call.id,
        name=call.name,
        text=outcome.text,
        error=outcome.error,
        range=rng,
        sandbox=outcome.sandbox,
        images=outcome.images or None,
    )
