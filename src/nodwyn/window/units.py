"""The trim decision of window-v20: whole units, a target from the run's growth, a kept head.

Three flags, each measurable alone (``bench/window_workloads.py``): ``UNITS`` elides a reply with
its calls and results as one unit, consecutive ones shown as ``[elided seq=A..B]``; ``GROWTH`` trims
to ``B - c*sqrt(C*g*(B - P))`` instead of low water; ``HEAD`` never elides the first units after
the task, its boundary recorded in the ``llm.req`` that fixed it. Protection is v16's. The rules in
full, with their symbols and the measurements behind them: docs/adr/0150.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from math import isqrt, sqrt

from nodwyn.values.recipe import V20_TUNING
from nodwyn.values.recipe import Tuning as Tuning  # re-exported: the v20 constants moved to values
from nodwyn.window import pairs as pairs_rules
from nodwyn.window.entries import _Entry
from nodwyn.window.estimate import estimate
from nodwyn.window.render import Item
from nodwyn.window.trim import PROTECTED

_UNIT_STARTS = ("assistant", "summary", "closed")  # kinds that begin a unit
_ANY_UNIT = ("assistant", "summary", "closed", "image")
_PHASES = (("result", "image"), ("assistant", "summary", "closed"))  # the v15-v19 order


_V20 = V20_TUNING  # the v20 constants (``values.recipe.Tuning``, part of the recipe; ADR 0150)


def _content_bytes(e: _Entry) -> int:
    """UTF-8 bytes of what an entry says (text, thinking, calls), uncut: the conversation's size."""
    if e.kind == "assistant":
        r = e.reply
        calls = sum(len(c.name.encode()) + len(c.arguments.encode()) for c in r.calls)
        return len(r.text.encode()) + len(r.thinking.encode()) + calls
    return len(e.text.encode())


_BASE_CAP = 3 * 1024  # the result cap the dial's constants were measured at (ADR 0390)
_WIDE_CAP = 5 * 1024  # the largest cap a trim deepens for


def _cap_tuning(t: Tuning, cap: int) -> Tuning:
    """v21 (``scaled_cap``): the growth constant times sqrt(cap / 3,072), the cap taken between 3,072
    and 5,120: larger results, a deeper trim, so a trim still leaves room for as many of them."""
    wide = min(max(cap, _BASE_CAP), _WIDE_CAP)
    return replace(t, growth=t.growth * sqrt(wide / _BASE_CAP))


def _growth_target(
    t: Tuning, *, budget: int, conversation: int, requests: int, before: int, shown: int | None = None
) -> int:
    """``B - c*sqrt(C*g*(B - P))`` with g = C / requests, clamped (all in tokens). ``shown`` (v22's
    ``shown_growth``): g = shown / requests, the conversation with each result as its cap shows it."""
    room = max(budget - before, 0)
    grown = conversation if shown is None else shown
    depth = t.growth * isqrt(conversation * grown * room // max(requests, 1))
    low, high = int(t.floor * budget), int(t.ceiling * budget)
    return min(max(budget - int(depth), low), high)


def _with_images(total: int, items: Sequence[Item]) -> int:
    """The estimate of ``total`` bytes of which ``items``' image parts are counted by the tile rule."""
    return estimate(total, sum(it.image_bytes for it in items), sum(it.image_tokens for it in items))


def _head_boundary(items: Sequence[Item], *, overhead: int, budget: int, t: Tuning) -> int | None:
    """The seq of the first unit past the head, or None while every unit so far fits in it."""
    first = next((i for i, it in enumerate(items) if it.kind in _UNIT_STARTS), None)
    if first is None:
        return None
    task = items[:first]
    s0 = _with_images(overhead + sum(len(it.piece) + 1 for it in task), task)
    room = int(t.head * (budget - s0 - t.reserve))
    used = ib = itok = 0
    i = first
    while i < len(items):
        j = i + 1
        while j < len(items) and items[j].kind not in _UNIT_STARTS:
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Sizes:
    """How a trim sizes what an elision leaves: an item's marker, a run's marker (v20), and a
    reply without its blocks (the blocks of replies after an elision go stale)."""

    marker_len: Callable[[Item], int]
    run_len: Callable[[int, int], int]
    unblocked_len: Callable[[Item], int]


class _Pass:
    """One trim's running account of the request: each item's current length, which items are
    still in it, and the estimate they make; ``elide`` changes it as the re-render will (the
    window checks the estimate against the re-rendered request)."""

    def __init__(
        self,
        items: Sequence[Item],
        *,
        overhead: int,
        image_bytes: int,
        image_tokens: int,
        units: bool,
        pairs: bool,
        keep_before: int | None,
        sizes: Sizes,
    ) -> None:
        n = len(items)
        self.items, self.n, self.overhead, self.sizes = items, n, overhead, sizes
        self.units, self.pairs, self.keep_before = units, pairs, keep_before
        self.cur = [len(it.piece) for it in items]
        self.alive = [True] * n
        self.done = [it.elided for it in items]  # elided, now or before
        self.last = [it.last or it.seq for it in items]  # a run's last reply seq
        self.left = list(range(-1, n - 1))  # neighbours among the messages still in the request
        self.right = list(range(1, n + 1))
        self.blocks_gone = [False] * n
        self.block_items = [i for i in range(n) if items[i].has_blocks]
        self.protected = set(range(max(0, n - PROTECTED), n))
        self.guarded = pairs_rules._protected_batches(items, self.protected) if pairs else set()
        self.body, self.count, self.ib, self.itok = sum(self.cur), n, image_bytes, image_tokens
        self.new: set[int] = set()
        self.cut_at: int | None = None

    def current(self) -> int:
        return estimate(self.overhead + self.body + max(self.count - 1, 0), self.ib, self.itok)

    def before(self, kinds: tuple[tuple[str, ...], ...]) -> int:
        """The estimate of what precedes the first item this pass may elide (the growth rule's P)."""
        first = next((i for i in range(self.n) if any(self.eligible(i, phase) for phase in kinds)), self.n)
        return _with_images(self.overhead + sum(self.cur[:first]) + first, self.items[:first])

    def eligible(self, i: int, phase: tuple[str, ...]) -> bool:
        item = self.items[i]
        if item.kind not in phase or self.done[i] or not self.alive[i] or i in self.protected:
            return False
        if self.keep_before is not None and item.seq < self.keep_before:
            return False
        return not (
            self.pairs
            and item.kind == "assistant"
            and not pairs_rules._may_elide_batch(self.items, i, self.guarded)
        )

    def _resize(self, i: int, length: int) -> None:
        self.body += length - self.cur[i]
        self.cur[i] = length

    def _remove(self, i: int) -> None:
        self.alive[i] = False
        self.body -= self.cur[i]
        self.count -= 1
        lft, rgt = self.left[i], self.right[i]
        if lft >= 0:
            self.right[lft] = rgt
        if rgt < self.n:
            self.left[rgt] = lft

    def cut(self, seq: int) -> None:
        """An elision at ``seq``: the blocks of every later reply go stale (once, at the earliest)."""
        if self.cut_at is not None and seq >= self.cut_at:
            return
        self.cut_at = seq
        for j in self.block_items:
            if self.alive[j] and not self.done[j] and not self.blocks_gone[j] and self.items[j].seq > seq:
                self._resize(j, self.sizes.unblocked_len(self.items[j]))
                self.blocks_gone[j] = True

    def _is_run(self, j: int) -> bool:
        return 0 <= j < self.n and self.alive[j] and self.done[j] and self.items[j].kind == "assistant"

    def elide(self, i: int) -> None:
        item = self.items[i]
        self.cut(item.seq)
        self.done[i] = True
        if item.kind == "image":
            self.ib -= item.image_bytes
            self.itok -= item.image_tokens
        self.new.add(item.seq)
        if self.pairs and item.kind == "assistant":
            for r in item.results:
                if self.alive[r]:
                    self._remove(r)
                    if not self.items[r].elided:
                        self.new.add(self.items[r].seq)
        if not (self.units and item.kind == "assistant"):
            self._resize(i, self.sizes.marker_len(item))
            return
        rep = i  # the run's first message: it joins the runs on either side
        if self._is_run(self.left[i]):
            rep = self.left[i]
            self.last[rep] = self.last[i]
            self._remove(i)
        if self._is_run(self.right[rep]):
            nxt = self.right[rep]
            self.last[rep] = self.last[nxt]
            self._remove(nxt)
        self._resize(rep, self.sizes.run_len(self.items[rep].seq, self.last[rep]))


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
    sizes: Sizes,
    shown: int | None = None,
) -> Decision:
    """Seqs to elide, oldest first, until the estimate reaches the target (as far as protection
    allows). ``units``: whole units in one pass, runs joined; else results first, then replies
    (the v16 rules, ``trim.py``). ``growth``: the target from the run's growth, else low water.
    ``keep_before``: nothing with a lower seq is elided (the head). ``cut``: the earliest seq
    already newly elided (results left out with their batch). ``shown``: the growth rule's g from
    the conversation as capped (v22), else from ``conversation``."""
    p = _Pass(
        items,
        overhead=overhead,
        image_bytes=image_bytes,
        image_tokens=image_tokens,
        units=units,
        pairs=pairs,
        keep_before=keep_before,
        sizes=sizes,
    )
    if cut is not None:
        p.cut(cut)
    kinds = (_ANY_UNIT,) if units else _PHASES
    target = low_water
    if growth is not None:
        target = _growth_target(
            growth,
            budget=budget,
            conversation=conversation,
            requests=requests,
            before=p.before(kinds),
            shown=shown,
        )
    for phase in kinds:
        for i in range(len(items)):
            if p.current() <= target:
                return Decision(elided=p.new, estimate=p.current(), target=target)
            if p.eligible(i, phase):
                p.elide(i)
    return Decision(elided=p.new, estimate=p.current(), target=target)
