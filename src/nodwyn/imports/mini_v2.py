"""mini-swe-agent v2 trajectories (``trajectory_format`` "mini-swe-agent-1.1", tool calls).

``messages`` is the OpenAI chat list the agent sent whole on every call (minus ``extra``), so the
neutral conversation is that list: ``system`` is the system prompt, ``user`` a user message,
``assistant`` a reply (``content`` its text, ``reasoning_content`` its thinking, ``tool_calls`` its
calls), ``tool`` a result. The ``exit`` record and everything after the last reply are dropped.
The ``bash`` tool's schema is a constant of mini-swe-agent's source, not in the file; the catalog
holds our own description of the same one-argument tool.
"""

from __future__ import annotations

import re
from typing import Any

from nodwyn.errors import ImportFormatError
from nodwyn.imports.jsonfile import field, text_of
from nodwyn.imports.run import Reader, Run, completion_sent, first_system, user
from nodwyn.values.content import AssistantMessage, ToolCall
from nodwyn.values.request import ToolSpec

FORMAT = "mini-swe-agent-v2"
TRAJECTORY_FORMAT = "mini-swe-agent-1.1"

BASH = ToolSpec(
    name="bash",
    description="Run a bash command in a fresh subshell of the task's environment and return its output.",
    parameters={
        "type": "object",
        "properties": {"command": {"type": "string", "description": "The command to run."}},
        "required": ["command"],
    },
)

_RETURNCODE = re.compile(r"<returncode>(-?\d+)</returncode>")


def failed(text: str) -> bool:
    """An observation whose ``<returncode>`` is not 0 is a failed result."""
    m = _RETURNCODE.search(text[:200])
    return bool(m and m.group(1) != "0")


def load(doc: Any, where: str, name: str) -> Run:
    """The run of a trajectory (``doc``: its JSON, of ``TRAJECTORY_FORMAT``)."""
    r = Reader()
    r.tools = (BASH,)
    for i, m in enumerate(field(doc, "messages", list, where)):
        w = f"{where}: messages[{i}]"
        role = field(m, "role", str, w)
        content = text_of(m.get("content"), f"{w}.content")
        if role == "system":
            r.system = first_system(r.system, r.out, content, w)
        elif role == "user":
            r.out.append(user(content))
        elif role == "assistant":
            calls = tuple(_call(c, f"{w}.tool_calls[{j}]") for j, c in enumerate(m.get("tool_calls") or []))
            r.names.update((c.id, c.name) for c in calls)
            thinking = m.get("reasoning_content") or ""
            if not isinstance(thinking, str):
                raise ImportFormatError(f"{w}.reasoning_content: expected text")
            r.out.append(AssistantMessage(text=content, thinking=thinking, calls=calls))
            r.sents.append(completion_sent(m, w))
        elif role == "tool":
            r.result(field(m, "tool_call_id", str, w), content, failed(content))
        elif role != "exit":
            raise ImportFormatError(f"{w}: unknown role {role!r}")
    if r.system is None:
        raise ImportFormatError(f"{where}: no system message")
    r.model = next((s.model for s in r.sents if s.model), "")
    return r.run(name, FORMAT, where)


def _call(c: Any, where: str) -> ToolCall:
    fn = field(c, "function", dict, where)
    return ToolCall(
        id=field(c, "id", str, where),
        name=field(fn, "name", str, f"{where}.function"),
        arguments=field(fn, "arguments", str, f"{where}.function"),
    )
