"""mini-swe-agent v1 trajectories (``trajectory_format`` "mini-swe-agent-1", text actions).

The model writes its action as one fenced ```` ```bash ```` block in its reply, and the agent
sends the output back as a user message. We turn each action into a tool call (ADR 0031): a reply
with exactly one block (the agent's own rule) becomes an assistant message whose text is the reply
without the block and whose one ``bash`` call carries the block's command as ``{"command": ...}``;
the user message that follows is that call's result. A reply with no block or several is left as
text, and the agent's format-error message after it stays a user message, as the model saw it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench.workloads.jsonfile import field, read_json, text_of
from bench.workloads.mini_v2 import BASH, failed
from bench.workloads.run import Run, WorkloadError, check_pairs, until_last_reply, user

from nodwyn.values.content import AssistantMessage, Message, ToolCall, ToolMessage

FORMAT = "mini-swe-agent-v1"
TRAJECTORY_FORMAT = "mini-swe-agent-1"

ACTION = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)


def split_action(reply: str) -> tuple[str, str | None]:
    """(the reply without its action block, the command) or (the reply, None) unless one block."""
    blocks = list(ACTION.finditer(reply))
    if len(blocks) != 1:
        return reply, None
    b = blocks[0]
    text = (reply[: b.start()].rstrip() + "\n\n" + reply[b.end() :].strip()).strip()
    return text, b.group(1)


def call_id(k: int) -> str:
    """The synthetic id of the k-th reply's action (deterministic, unique in the run)."""
    return f"action-{k}"


def load(path: Path, name: str) -> Run:
    doc = read_json(path)
    where = str(path)
    fmt = field(doc, "trajectory_format", str, where)
    if fmt != TRAJECTORY_FORMAT:
        raise WorkloadError(f"{where}: trajectory_format {fmt!r} is not {TRAJECTORY_FORMAT!r}")
    raw = field(doc, "messages", list, where)
    system: str | None = None
    out: list[Message] = []
    pending: ToolCall | None = None
    replies = 0
    for i, m in enumerate(raw):
        w = f"{where}: messages[{i}]"
        role = field(m, "role", str, w)
        content = text_of(m.get("content"), f"{w}.content")
        if role == "system":
            if system is not None or out:
                raise WorkloadError(f"{w}: a second system message; the agent sends one, first")
            system = content
        elif role == "assistant":
            if pending is not None:
                raise WorkloadError(f"{w}: two replies in a row; the first one's action has no output")
            text, command = split_action(content)
            if command is None:
                out.append(AssistantMessage(text=content))
            else:
                pending = ToolCall(
                    id=call_id(replies), name=BASH.name, arguments=json.dumps({"command": command})
                )
                out.append(AssistantMessage(text=text, calls=(pending,)))
            replies += 1
        elif role == "user":
            if pending is not None:
                out.append(
                    ToolMessage(call_id=pending.id, name=pending.name, text=content, error=failed(content))
                )
                pending = None
            else:
                out.append(user(content))
        else:
            raise WorkloadError(f"{w}: unknown role {role!r}")
    if system is None:
        raise WorkloadError(f"{where}: no system message")
    messages = until_last_reply(out)
    check_pairs(messages, where)
    return Run(name=name, format=FORMAT, system=system, tools=(), messages=tuple(messages))
