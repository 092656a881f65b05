"""Reasoning blocks (v18): given back on their reply, only to their origin, until stale.

A reply's blocks go back when the block's origin equals the build's origin (``Origin``
equality), the recipe gives blocks back (``origin`` is None otherwise), and the reply is not
stale. A reply is stale once an entry before it in its view was folded or elided after it was made
(``Window`` marks them as those events are fed, with :func:`replies_between`), or an accepted
summary's span starts before it. Stale is permanent; the thinking text stays on the message.
"""

from __future__ import annotations

from collections.abc import Iterable

from nodwyn.values.content import Origin, ThinkingBlock
from nodwyn.window.summaries import Summary


def allowed(seq: int, origin: Origin | None, stale: frozenset[int], summaries: Iterable[Summary]) -> bool:
    """Whether the reply at ``seq`` may carry blocks at all in this render."""
    if origin is None or seq in stale:
        return False
    return not any(s.first < seq < s.seq for s in summaries)


def _for_origin(blocks: Iterable[ThinkingBlock], origin: Origin) -> tuple[ThinkingBlock, ...]:
    """The blocks that go back to ``origin``, in their order."""
    return tuple(b for b in blocks if b.origin == origin)
