"""How a turn ends when it does not end with a whole answer (issue 25): an empty reply, the step
limit, an answer cut at the output cap; and a call cut at the cap, which is not run. Each reason
is a key of ``settings.STOPPED_EXIT`` (the exit code ``nodwyn run`` ends with, docs/exit-codes.md).
"""

from __future__ import annotations

import json
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
