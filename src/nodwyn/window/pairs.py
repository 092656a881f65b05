"""Tool-call pairs (v16): results linked to their calling batch, batches protected or complete.

While a view renders, each result links to the latest reply before it that made a call with its
id (a reused id refers to its latest batch). Eliding a reply omits its results; a result among the
protected messages protects its batch; a batch still waiting for a result is not newly elided.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from nodwyn.values.content import ToolMessage
from nodwyn.window.render import Item


def _protected_batches(items: Sequence[Item], protected: Iterable[int]) -> set[int]:
    """Item indexes of the batches a protected result protects."""
    return {items[i].batch for i in protected if items[i].kind == "result" and items[i].batch >= 0}


def _may_elide_batch(items: Sequence[Item], index: int, protected: set[int]) -> bool:
    """A reply may be newly elided: its batch is not protected, and every call has its result."""
    if index in protected:
        return False
    answered = {m.call_id for r in items[index].results if isinstance(m := items[r].message, ToolMessage)}
    return all(call in answered for call in items[index].calls)
