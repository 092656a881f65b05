"""A sliding window that drops the oldest messages to fit the budget (and ``whole``: no window).

Request k keeps the system prompt, the tools, the task (the user messages before the first reply)
and the longest run of the latest messages that fits the budget, starting at a reply or a user
message so that no result is left without its call. It always keeps the latest reply and its
results, over the budget if need be. This is what most agents without a window discipline do once
the context is full (pydantic-ai's Harness sliding window; aider's and many scripts' "drop the
oldest"): every request then drops something at the front, so its prefix moves. ADR 0034.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate

from nodwyn.values.content import ToolMessage
from nodwyn.whatif.measure import BYTES_PER_TOKEN, Measured, request_size
from nodwyn.whatif.prepared import Prepared
from nodwyn.whatif.sent import Sent, measure, whole


def requests(p: Prepared, budget: int) -> list[Sent]:
    msgs = p.run.messages
    first = p.first
    sizes = [0, *accumulate(len(m) for m in p.messages)]
    cuts = [i for i in range(first, len(msgs)) if not isinstance(msgs[i], ToolMessage)]
    frame = request_size(p.system, p.tools, [], None)
    limit = budget * BYTES_PER_TOKEN
    out: list[Sent] = []
    for end in p.replies:
        usable = cuts[: bisect_right(cuts, end - 1)] or [end]  # cut points that keep the latest turn

        def size(c: int, end: int = end) -> int:
            n = first + end - c
            return frame + sizes[first] + sizes[end] - sizes[c] + max(n - 1, 0)

        lo, hi = 0, len(usable) - 1  # the first cut that fits, else the last one
        while lo < hi:
            mid = (lo + hi) // 2
            if size(usable[mid]) <= limit:
                hi = mid
            else:
                lo = mid + 1
        cut = max(usable[lo], first)
        keep = (*range(first), *range(cut, end))
        out.append(Sent(end=end, messages=tuple(msgs[i] for i in keep), shown=whole(keep)))
    return out


def replay(p: Prepared, budget: int) -> list[Measured]:
    return measure(p, requests(p, budget))


def append_requests(p: Prepared, budget: int = 0) -> list[Sent]:
    """Every request whole, whatever the budget: the policy the minimum is measured on."""
    msgs = p.run.messages
    return [Sent(end=end, messages=msgs[:end], shown=whole(range(end))) for end in p.replies]


def append_only(p: Prepared) -> list[Measured]:
    """Every request whole: the policy the minimum is measured on (and a check of it)."""
    return measure(p, append_requests(p))
