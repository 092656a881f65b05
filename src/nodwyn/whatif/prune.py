"""opencode's prune of old tool outputs, with its compaction on overflow.

Modelled on ``SessionCompaction.prune`` in anomalyco/opencode
``packages/opencode/src/session/compaction.ts``: at the end of each user turn (``prompt.ts`` calls
it when the agent loop stops) it walks back through the messages, skipping everything until it has
passed two user messages (the latest two turns are never pruned) and stopping at a compaction
summary or at a result pruned before; it sums each tool result's estimated tokens
(``Token.estimate``: characters / 4); once the sum passes ``PRUNE_PROTECT`` (40,000) every older
result is marked, and the marks are kept only if they free more than ``PRUNE_MINIMUM`` (20,000).
A marked result is sticky (``time.compacted`` is stored) and is sent as
``[Old tool result content cleared]``. On overflow (the request over the usable context, here the
budget) the whole conversation is compacted (``compaction.requests`` with a trigger of 1.0).

A run made of one task and its agent loop is one user turn, so prune never fires on it and only the
compaction acts; sessions with many user turns (Claude Code, Codex imports) prune (ADR 0290).
"""

from __future__ import annotations

from nodwyn.values.content import Message, ToolMessage, UserMessage
from nodwyn.whatif import compaction
from nodwyn.whatif.prepared import Prepared
from nodwyn.whatif.sent import Sent

PRUNE_PROTECT = 40_000
PRUNE_MINIMUM = 20_000
PROTECTED_TOOLS = frozenset({"skill"})
CLEARED = "[Old tool result content cleared]"


def estimate(text: str) -> int:
    """opencode's ``Token.estimate``: characters / 4, rounded."""
    return round(len(text) / 4)


def marks(msgs: tuple[Message, ...], end: int, pruned: set[int], floor: int = 0) -> set[int]:
    """The results ``prune`` marks when called with ``messages[:end]``, the latest compaction at
    ``floor``; ``pruned`` holds earlier marks."""
    total = freed = turns = 0
    found: set[int] = set()
    for i in range(end - 1, floor - 1, -1):
        m = msgs[i]
        if isinstance(m, UserMessage):
            turns += 1
        if turns < 2 or not isinstance(m, ToolMessage) or m.name in PROTECTED_TOOLS:
            continue
        if i in pruned:
            break
        cost = estimate(m.text)
        total += cost
        if total > PRUNE_PROTECT:
            freed += cost
            found.add(i)
    return found if freed > PRUNE_MINIMUM else set()


def requests(p: Prepared, budget: int) -> list[Sent]:
    msgs = p.run.messages
    pruned: set[int] = set()
    cleared: dict[int, Message] = {}
    done = p.first

    def prune(end: int, start: int) -> None:
        nonlocal done
        for i in range(done + 1, end):  # a user message after a reply starts a new turn
            if isinstance(msgs[i], UserMessage):
                pruned.update(marks(msgs, i, pruned, start))
        done = max(done, end)

    def render(i: int, m: Message) -> Message:
        if i in pruned and isinstance(m, ToolMessage):
            return cleared.setdefault(
                i, ToolMessage(call_id=m.call_id, name=m.name, text=CLEARED, error=m.error)
            )
        return m

    return compaction.requests(p, budget, trigger=1.0, render=render, prune=prune)
