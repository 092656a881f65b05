"""How a turn ends when it does not end with a whole answer (issue 25): an empty reply, the step
limit, an answer cut at the output cap; and a call cut at the cap, which is not run. Each reason
is a key of ``settings.STOPPED_EXIT`` (the exit code ``nodwyn run`` ends with, docs/exit-codes.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass

from nodwyn.agent.settings import EMPTY_REPLY, OUTPUT_CAP, STEP_LIMIT
from nodwyn.agent.tools import Outcome
from nodwyn.agent.tools.base import fail
from nodwyn.values.content import ToolCall
from nodwyn.values.request import Response


@dataclass(frozen=True, slots=True, kw_only=True)
class End:
    stopped: str  # EMPTY_REPLY, STEP_LIMIT or OUTPUT_CAP
    why: str  # for a person, and the note the log keeps
    text: str = ""  # what there is of an answer (a cut one)
    cut_at: int | None = None


def _out(response: Response) -> int:
    return response.usage.output_tokens or 0


def of_reply(response: Response, model: str) -> End | None:
    """How a reply without calls ends the turn: None for a whole answer."""
    text = response.text
    if text.strip() and response.finish == "length":
        why = f"the reply was cut at {_out(response)} output tokens (the output cap); "
        why += "ask for less at once, or raise the model's max_output"
        return End(stopped=OUTPUT_CAP, why=why, text=text, cut_at=_out(response))
    if text.strip():
        return None
    why = f"the model ({model}) answered with no text and no tool calls; "
    return End(stopped=EMPTY_REPLY, why=why + "the turn ends here (its reply is in the log)")


# A reply that ends the turn unfinished, asked once (per turn) to go on, in a user message the log
# keeps so replay rebuilds what the model was shown (ADR 0445): an empty reply after the turn's tool
# results (a small model's usual stop after an edit that worked), or an answer that writes a call to
# an offered tool as text in a code block (prose the parser rightly leaves as prose, so nothing ran).
NUDGE = "Your reply was empty. If the task is done, answer the user now; if not, make the next tool call."
NUDGED = "the model answered with no text and no tool calls after a tool result; asked it once to go on"
_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.S)


def as_text_call(text: str, tools: Collection[str]) -> str | None:
    """The offered tool a code block of ``text`` calls as text, if any: a JSON object naming it
    (``{"name": "fs-grep", "arguments": {...}}``), or a line that starts with its name."""
    for m in _FENCE.finditer(text):
        body = m.group(1).strip()
        try:
            value = json.loads(body)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict) and value.get("name") in tools:
            return str(value["name"])
        first = body.split(None, 1)[0] if body else ""
        if first in tools:
            return first
    return None


def text_call_nudge(name: str) -> str:
    return (
        f"Your reply wrote a {name} call as text in a code block, so nothing was run. If you need "
        f"its result, make the call now as a tool call; if not, answer the user."
    )


def nudge_for(response: Response, end: End | None, tools: Collection[str], *, called: bool) -> str | None:
    """What a reply without calls is asked, once, instead of ending the turn (None: it ends)."""
    if end is not None:
        return NUDGE if end.stopped == EMPTY_REPLY and called else None
    name = as_text_call(response.text, tools)
    return None if name is None else text_call_nudge(name)


def nudged_note(ask: str) -> str:
    if ask == NUDGE:
        return NUDGED
    return "the model wrote a tool call as text instead of calling it; asked it once to go on"


def step_limit(steps: int) -> End:
    return End(stopped=STEP_LIMIT, why=f"stopped after {steps} model requests in one turn; say how to go on")


def cut_call(response: Response, n: int) -> int | None:
    """The reply's output tokens if its call ``n`` is the one the output cap cut (its last)."""
    return _out(response) if response.finish == "length" and n == len(response.calls) - 1 else None


def whole(arguments: str) -> bool:
    """Arguments that parse as a JSON object: a call the cap cut may still have been whole."""
    try:
        return isinstance(json.loads(arguments), dict)
    except json.JSONDecodeError:
        return False


def cut_outcome(call: ToolCall, cut_at: int) -> Outcome:
    return fail(
        f"this call to {call.name or 'a tool'} was cut at the output cap ({cut_at} output tokens) "
        "before it was complete, so nothing was run; make it shorter (fs-edit changes part of a "
        "file; a long file can be written in parts)"
    )
