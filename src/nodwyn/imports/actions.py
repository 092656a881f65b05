"""Runs whose actions are text in the model's reply (mini-swe-agent v1, SWE-agent).

The history alternates: the system prompt first, then replies and what the agent sent back. A
reply whose action the loader's ``split`` recognises becomes an assistant message with that one
call, and the next message back is the call's result; any other reply stays text, and the message
after it stays a user message, as the model saw it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nodwyn.errors import ImportFormatError
from nodwyn.imports.jsonfile import field, text_of
from nodwyn.imports.run import Sent, check_pairs, completion_sent, first_system, until_last_reply, user
from nodwyn.values.content import AssistantMessage, Message, ToolCall, ToolMessage

# (the reply without its action, the call) or (the reply, None); ``k`` counts the replies before it
Split = Callable[[str, int], tuple[str, ToolCall | None]]


def text_actions(
    raw: list[Any],
    where: str,
    name: str,
    *,
    split: Split,
    back: tuple[str, ...] = ("user",),
    failed: Callable[[str], bool] = lambda text: False,
    sents: list[Sent] | None = None,
) -> tuple[str, list[Message]]:
    """The system prompt and the conversation of the history ``raw`` (``where``: the file,
    ``name``: the history's field). ``back``: the roles of what the agent sends back; ``failed``
    tells a failed result from its text; ``sents`` (if given) gets each reply's reported usage."""
    system: str | None = None
    out: list[Message] = []
    pending: ToolCall | None = None
    replies = 0
    for i, m in enumerate(raw):
        w = f"{where}: {name}[{i}]"
        role = field(m, "role", str, w)
        content = text_of(m.get("content"), f"{w}.content")
        if role == "system":
            system = first_system(system, out, content, w)
        elif role == "assistant":
            if pending is not None:
                raise ImportFormatError(f"{w}: two replies in a row; the first one's action has no output")
            text, pending = split(content, replies)
            out.append(AssistantMessage(text=text, calls=() if pending is None else (pending,)))
            if sents is not None:
                sents.append(completion_sent(m, w))
            replies += 1
        elif role in back:
            if pending is not None:
                out.append(
                    ToolMessage(call_id=pending.id, name=pending.name, text=content, error=failed(content))
                )
                pending = None
            else:
                out.append(user(content))
        else:
            raise ImportFormatError(f"{w}: unknown role {role!r}")
    if system is None:
        raise ImportFormatError(f"{where}: no system message in {name}")
    messages = until_last_reply(out)
    check_pairs(messages, where)
    return system, messages


def call_id(k: int) -> str:
    """The synthetic id of the k-th reply's action (deterministic, unique in the run)."""
    return f"action-{k}"
