"""A conversation, and its parts measured once and shared by every policy replayed over it.

A conversation is what a model saw, in order: the system prompt, the tool catalog and the
messages, each ``AssistantMessage`` one of its replies; request k is everything before the k-th
reply. ``nodwyn.imports.Run`` is one; this package takes any value with those attributes, so it
stays pure and below the importers.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate
from typing import Protocol

from nodwyn.stats import Encoder
from nodwyn.values.content import AssistantMessage, Message
from nodwyn.values.request import ToolSpec
from nodwyn.whatif.measure import content_size


class Conversation(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def system(self) -> str: ...
    @property
    def tools(self) -> tuple[ToolSpec, ...]: ...
    @property
    def messages(self) -> tuple[Message, ...]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Prepared:
    run: Conversation
    parts: Encoder  # the run's messages encoded once, shared by every request built from them
    system: bytes
    tools: tuple[bytes, ...]
    messages: tuple[bytes, ...]  # canonical bytes of each message of the run
    content: tuple[int, ...]  # prefix sums of content bytes: content[i] = bytes of messages[:i]
    replies: tuple[int, ...]  # indexes of the replies: request k is messages[:replies[k]]

    @property
    def first(self) -> int:
        """Index of the first reply: the messages before it are the task."""
        return self.replies[0] if self.replies else len(self.messages)

    @property
    def minimum(self) -> int:
        """What sending everything append-only costs uncached: the bytes of the last request's
        parts, which is the sum of what each request appended to the one before."""
        last = self.replies[-1] if self.replies else 0
        return len(self.system) + sum(len(t) for t in self.tools) + sum(len(m) for m in self.messages[:last])


def prepare(run: Conversation, parts: Encoder | None = None) -> Prepared:
    parts = parts or Encoder()
    return Prepared(
        run=run,
        parts=parts,
        system=parts.system(run.system),
        tools=tuple(parts.tool(t) for t in run.tools),
        messages=tuple(parts.message(m) for m in run.messages),
        content=(0, *accumulate(content_size(m) for m in run.messages)),
        replies=tuple(i for i, m in enumerate(run.messages) if isinstance(m, AssistantMessage)),
    )
