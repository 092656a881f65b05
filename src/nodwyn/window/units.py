"""The trim decision of window-v20: whole units, a target from the run's growth, a kept head.

Three flags, each measurable alone (``bench/window_workloads.py``): ``UNITS`` elides a reply with
its calls and results as one unit, consecutive ones shown as ``[elided seq=A..B]``; ``GROWTH`` trims
to ``B - c*sqrt(C*g*(B - P))`` instead of low water; ``HEAD`` never elides the first units after
the task, its boundary recorded in the ``llm.req`` that fixed it. Protection is v16's. The rules in
full, with their symbols and the measurements behind them: docs/adr/0150.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import isqrt

from nodwyn.values.recipe import V20_TUNING
from nodwyn.values.recipe import Tuning as Tuning  # re-exported: the v20 constants moved to values
from nodwyn.window import pairs as pairs_rules
from nodwyn.window.entries import Entry
from nodwyn.window.estimate import estimate
from nodwyn.window.render import Item
from nodwyn.window.trim import PROTECTED

UNIT_STARTS = ("assistant", "summary", "closed")  # kinds that begin a unit
_ANY_UNIT = ("assistant", "summary", "closed", "image")
_PHASES = (("result", "image"), ("assistant", "summary", "closed"))  # the v15-v19 order


V20 = V20_TUNING  # the v20 constants (``values.recipe.Tuning``, part of the recipe; ADR 0150)


def content_bytes(e: Entry) -> int:
    """UTF-8 bytes of what an entry says (text, thinking, calls), uncut: the conversation's size."""
    if e.kind == "assistant":
        r = e.reply
        calls = sum(len(c.name.encode()) + len(c.arguments.encode()) for c in r.calls)
        return len(r.text.encode()) + len(r.thinking.encode()) + calls
    return len(e.text.encode())


def growth_target(t: Tuning, *, budget: int, conversation: int, requests: int, before: int) -> int:
    """``B - c*sqrt(C*g*(B - P))`` with g = C / requests, clamped (all in tokens)."""
    room = max(budget - before, 0)
    depth = t.growth * isqrt(conversation * conversation * room // max(requests, 1))
    low, high = int(t.floor * budget), int(t.ceiling * budget)
    return min(max(budget - int(depth), low), high)


def head_boundary(items: Sequence[Item], *, overhead: int, budget: int, t: Tuning) -> int | None:
    """The seq of the first unit past the head, or None while every unit so far fits in it."""
    first = next((i for i, it in enumerate(items) if it.kind in UNIT_STARTS), None)
    if first is None:
        return None
    task = items[:first]
    s0 = estimate(
        overhead + sum(len(it.piece) + 1 for it in task),
        sum(it.image_bytes for it in task),
        sum(it.image_tokens for it in task),
    )
    room = int(t.head * (budget - s0 - t.reserve))
    used = ib = itok = 0
    i = first
    while i < len(items):
        j = i + 1
        while j < len(items) and items[j].kind not in UNIT_STARTS:
            j += 1
        unit = items[i:j]
        used += sum(len(it.piece) + 1 for it in unit)
        ib += sum(it.image_bytes for it in unit)
        itok += sum(it.image_tokens for it in unit)
        if estimate(used, ib, itok) > room:
            return items[i].seq
        i = j
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    elided: set[int]
    estimate: int  # the estimate the elisions leave (checked by the window)
    target: int  # what the trim aimed for, tokens


def choose(
    items: Sequence[Item],
    *,
    overhead: int,
    image_bytes: int,
    image_tokens: int,
    budget: int,
    low_water: int,
    units: bool,
    growth: Tuning | None,
    conversation: int,
    requests: int,
    keep_before: int | None,
    pairs: bool,
    cut: int | None,
    marker_len: Callable[[Item], int],
    run_len: Callable[[int, int], int],
    unblocked_len: Callable[[Item], int],
) -> Decision:
    """Seqs to elide, oldest first, until the estimate reaches the target (as far as protection
    allows). ``units``: whole units in one pass, runs joined; else results first, then replies.
    ``growth``: the target from the run's growth, else low water. ``keep_before``: nothing with a
    lower seq is elided (the head)."""
    n = len(items)
    cur = [len(it.piece) for it in items]
    alive = [True] * n
    done = [it.elided for it in items]
    last = [it.last or it.seq for it in items]  # a run's last reply seq
    left = list(range(-1, n - 1))  # neighbours among the messages still in the request
    right = list(range(1, n + 1))
    blocks_gone = [False] * n
    block_items = [i for i in range(n) if items[i].has_blocks]
    protected = set(range(max(0, n - PROTECTED), n))
    guarded = pairs_rules.protected_batches(items, protected) if pairs else set()
    state = {"body": sum(cur), "count": n, "ib": image_bytes, "itok": image_tokens}
    new: set[int] = set()
    cut_at = cut

    def current() -> int:
        return estimate(overhead + state["body"] + max(state["count"] - 1, 0), state["ib"], state["itok"])

    def resize(i: int, length: int) -> None:
        state["body"] += length - cur[i]
        cur[i] = length

    def remove(i: int) -> None:
        alive[i] = False
        state["body"] -= cur[i]
        state["count"] -= 1
        lft, rgt = left[i], right[i]
        if lft >= 0:
            right[lft] = rgt
        if rgt < n:
            left[rgt] = lft

    def drop_blocks_after(seq: int) -> None:
        for j in block_items:
            if alive[j] and not done[j] and not blocks_gone[j] and items[j].seq > seq:
                resize(j, unblocked_len(items[j]))
                blocks_gone[j] = True

    if cut_at is not None:
        drop_blocks_after(cut_at)

    kinds = (_ANY_UNIT,) if units else _PHASES

    def eligible(i: int, phase: tuple[str, ...]) -> bool:
        item = items[i]
        if item.kind not in phase or done[i] or not alive[i] or i in protected:
            return False
        if keep_before is not None and item.seq < keep_before:
            return False
        return not (pairs and item.kind == "assistant" and not pairs_rules.may_elide_batch(items, i, guarded))

    if growth is None:
        target = low_water
    else:
        first = next((i for i in range(n) if any(eligible(i, phase) for phase in kinds)), n)
        before = estimate(
            overhead + sum(cur[:first]) + first,
            sum(it.image_bytes for it in items[:first]),
            sum(it.image_tokens for it in items[:first]),
        )
        target = growth_target(
            growth, budget=budget, conversation=conversation, requests=requests, before=before
        )

    def is_run(j: int) -> bool:
        return 0 <= j < n and alive[j] and done[j] and items[j].kind == "assistant"

    def elide(i: int) -> None:
        nonlocal cut_at
        item = items[i]
        if cut_at is None or item.seq < cut_at:
            cut_at = item.seq
            drop_blocks_after(item.seq)
        done[i] = True
        if item.kind == "image":
            state["ib"] -= item.image_bytes
            state["itok"] -= item.image_tokens
        new.add(item.seq)
        if pairs and item.kind == "assistant":
            for r in item.results:
                if alive[r]:
                    remove(r)
                    if not items[r].elided:
                        new.add(items[r].seq)
        if not (units and item.kind == "assistant"):
            resize(i, marker_len(item))
            return
        rep = i  # the run's first message: it joins the runs on either side
        if is_run(left[i]):
            rep = left[i]
            last[rep] = last[i]
            remove(i)
        if is_run(right[rep]):
            nxt = right[rep]
            last[rep] = last[nxt]
            remove(nxt)
        resize(rep, run_len(items[rep].seq, last[rep]))

    for phase in kinds:
        for i in range(n):
            if current() <= target:
                return Decision(elided=new, estimate=current(), target=target)
            if eligible(i, phase):
                elide(i)
    return Decision(elided=new, estimate=current(), target=target)
