"""The neutral conversation a loader makes of one agent run.

A run is what its model saw, in order: the system prompt, the tool catalog (empty for agents whose
actions are text), and the messages, where each ``AssistantMessage`` is one of the model's replies.
Request k is the system prompt, the catalog and ``messages[:replies[k]]``: everything before the
k-th reply. Nothing after the last reply is kept (the model never saw it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nodwyn.errors import ImportFormatError
from nodwyn.values.content import AssistantMessage, Message, TextPart, ToolMessage, UserMessage
from nodwyn.values.request import ToolSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    name: str  # path of the run relative to the workload folder
    format: str  # "mini-swe-agent-v1", "mini-swe-agent-v2", "swe-agent", "openhands-v1"
    system: str
    tools: tuple[ToolSpec, ...]
    messages: tuple[Message, ...]
    notes: tuple[str, ...] = field(default=())  # what the loader left out, e.g. peer condensations

    @property
    def replies(self) -> tuple[int, ...]:
        """Indexes of the model's replies in ``messages``: request k is ``messages[:replies[k]]``."""
        return tuple(i for i, m in enumerate(self.messages) if isinstance(m, AssistantMessage))


def user(text: str) -> UserMessage:
    return UserMessage(parts=(TextPart(text=text),))


def first_system(system: str | None, out: list[Message], content: str, where: str) -> str:
    """``content`` as the run's system prompt: the agent sends one, before any other message."""
    if system is not None or out:
        raise ImportFormatError(f"{where}: a second system message; the agent sends one, first")
    return content


def check_pairs(messages: list[Message], where: str) -> None:
    """Every result answers a call of the latest reply before it, once; every call but the last
    reply's is answered before the next reply. Loaders call this so a replay never sees orphans."""
    open_calls: dict[str, str] = {}
    last_reply = max((i for i, m in enumerate(messages) if isinstance(m, AssistantMessage)), default=-1)
    for i, m in enumerate(messages):
        if isinstance(m, AssistantMessage):
            if open_calls:
                raise ImportFormatError(
                    f"{where}: message {i}: calls {sorted(open_calls)} have no result before the next reply"
                )
            open_calls = {c.id: c.name for c in m.calls}
            if len(open_calls) != len(m.calls):
                raise ImportFormatError(f"{where}: message {i}: a reply repeats a call id")
        elif isinstance(m, ToolMessage):
            if m.call_id not in open_calls:
                raise ImportFormatError(
                    f"{where}: message {i}: result for call {m.call_id!r}, not a call of the latest reply"
                )
            del open_calls[m.call_id]
    if open_calls and last_reply < len(messages) - 1:
        raise ImportFormatError(f"{where}: calls {sorted(open_calls)} of the last reply are half answered")


def until_last_reply(messages: list[Message]) -> list[Message]:
    """The messages up to and including the last reply: what follows it no model saw."""
    last = max((i for i, m in enumerate(messages) if isinstance(m, AssistantMessage)), default=-1)
    return messages[: last + 1]
