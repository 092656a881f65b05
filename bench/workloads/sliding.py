"""The baseline: a sliding window that drops the oldest messages to fit the budget.

Request k keeps the system prompt, the tools, the task (the user messages before the first reply)
and the longest run of the latest messages that fits the budget, starting at a reply or a user
message so that no result is left without its call. It always keeps the latest reply and its
results, over the budget if need be. This is what most agents without a window discipline do once
the context is full: every request then drops something at the front, so its prefix moves.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate

from bench.workloads.measure import BYTES_PER_TOKEN, Measured, recent_shares, request_size
from bench.workloads.prepared import Prepared

from nodwyn.stats.prefix import common_parts
from nodwyn.values.content import ToolMessage


def replay(p: Prepared, budget: int) -> list[Measured]:
    msgs = p.messages
    first = p.replies[0] if p.replies else len(msgs)
    pinned = list(msgs[:first])
    sizes = [0, *accumulate(len(m) for m in msgs)]
    cuts = [i for i in range(first, len(msgs)) if not isinstance(p.run.messages[i], ToolMessage)]
    limit = budget * BYTES_PER_TOKEN
    out: list[Measured] = []
    prev: list[bytes] = []
    for end in p.replies:
        usable = cuts[: bisect_right(cuts, end - 1)] or [end]  # cut points that keep the latest turn

        def size(c: int, end: int = end) -> int:
            n = len(pinned) + end - c
            body = sizes[first] + sizes[end] - sizes[c] + max(n - 1, 0)
            return request_size(p.system, p.tools, [], None) + body

        lo, hi = 0, len(usable) - 1  # the first cut that fits, else the last one
        while lo < hi:
            mid = (lo + hi) // 2
            if size(usable[mid]) <= limit:
                hi = mid
            else:
                lo = mid + 1
        cut = usable[lo]
        cur = [p.system, *p.tools, *pinned, *msgs[cut:end]]
        cached = common_parts(prev, cur)[1]
        out.append(
            Measured(
                stream=sum(len(b) for b in cur),
                cached=cached,
                broken=bool(prev) and cached < sum(len(b) for b in prev),
                size=size(cut),
                visible=p.content[first] + p.content[end] - p.content[cut],
                conversation=p.content[end],
                recent=recent_shares(p.content, end, [(i, 1.0) for i in (*range(first), *range(cut, end))]),
            )
        )
        prev = cur
    return out


def append_only(p: Prepared) -> list[Measured]:
    """Every request whole: the policy the minimum is measured on (and a check of it)."""
    out: list[Measured] = []
    prev: list[bytes] = []
    for end in p.replies:
        cur = [p.system, *p.tools, *p.messages[:end]]
        out.append(
            Measured(
                stream=sum(len(b) for b in cur),
                cached=common_parts(prev, cur)[1],
                size=request_size(p.system, p.tools, p.messages[:end], None),
                visible=p.content[end],
                conversation=p.content[end],
            )
        )
        prev = cur
    return out
