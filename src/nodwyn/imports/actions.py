"""Runs whose actions are text in the model's reply (mini-swe-agent v1, SWE-agent).

The history alternates: the system prompt first, then replies and what the agent sent back. A
reply with exactly one block the loader's ``action`` pattern matches becomes an assistant message
with that one call (``call`` of the block, its id ``action-K`` for the K-th reply) and the reply
without the block as its text, and the next message back is the call's result; any other reply
stays text, and the message after it stays a user message, as the model saw it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from nodwyn.errors import ImportFormatError
from nodwyn.imports.jsonfile import field, text_of
from nodwyn.imports.run import Reader, Run, completion_sent, first_system, user
from nodwyn.values.content import AssistantMessage, ToolCall

# The call an action block makes (the block's match, the call's id)
Call = Callable[[re.Match[str], str], ToolCall]


def text_actions(
    doc: Any,
    where: str,
    key: str,
    run: tuple[str, str],
    *,
    action: re.Pattern[str],
    call: Call,
    back: tuple[str, ...] = ("user",),
    failed: Callable[[str], bool] = lambda text: False,
    usage: bool = False,
) -> Run:
    """The run (``run``: its name and format) of the history ``doc[key]`` (``where``: the file).
    ``back``: the roles of what the agent sends back; ``failed`` tells a failed result from its
    text; with ``usage`` each reply's reported usage and model are its request's."""
    r = Reader()
    pending: ToolCall | None = None
    replies = 0
    for i, m in enumerate(field(doc, key, list, where)):
        w = f"{where}: {key}[{i}]"
        role = field(m, "role", str, w)
        content = text_of(m.get("content"), f"{w}.content")
        if role == "system":
            r.system = first_system(r.system, r.out, content, w)
        elif role == "assistant":
            if pending is not None:
                raise ImportFormatError(f"{w}: two replies in a row; the first one's action has no output")
            text, pending = content, None
            if len(blocks := list(action.finditer(content))) == 1:
                b = blocks[0]
                text = (content[: b.start()].rstrip() + "\n\n" + content[b.end() :].strip()).strip()
                pending = call(b, f"action-{replies}")
                r.names[pending.id] = pending.name
            r.out.append(AssistantMessage(text=text, calls=() if pending is None else (pending,)))
            if usage:
                r.sents.append(completion_sent(m, w))
            replies += 1
        elif role in back:
            if pending is not None:
                r.result(pending.id, content, failed(content))
                pending = None
            else:
                r.out.append(user(content))
        else:
            raise ImportFormatError(f"{w}: unknown role {role!r}")
    if r.system is None:
        raise ImportFormatError(f"{where}: no system message in {key}")
    r.model = next((s.model for s in r.sents if s.model), "")
    return r.run(*run, where)
