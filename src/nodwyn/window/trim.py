"""Hysteresis: above the trim line, elide oldest first down to low water, then leave it alone.

Called only when the estimate is over the trim line (high water, or the ceiling for a headroom
request, v10). Candidates, oldest first: tool results and image attachments, then assistant text
(replies, summaries, a closed narrowing's result); never a person's message or a plan. The four
most recent messages are protected. With pairs (v16) eliding a reply also omits its results, a
protected result protects its batch, and a batch still waiting for results is not newly elided.
Blocks (v18): eliding an entry makes the blocks of every later reply stale, and they leave the
estimate with it. The accounting is exact: the window checks it against the re-rendered request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from nodwyn.window import pairs as pairs_rules
from nodwyn.window.estimate import estimate
from nodwyn.window.render import Item

PROTECTED = 4


def choose(
    items: Sequence[Item],
    *,
    overhead: int,
    image_bytes: int,
    image_tokens: int,
    low_water: int,
    pairs: bool,
    cut: int | None,
    marker_len: Callable[[Item], int],
    unblocked_len: Callable[[Item], int],
) -> tuple[set[int], int]:
    """Seqs to elide so that the estimate reaches ``low_water`` (as far as protection allows), and
    the estimate they leave (the window checks it against the re-rendered request)."""
    n = len(items)
    cur = [len(it.piece) for it in items]
    alive = [True] * n
    done = [it.elided for it in items]  # elided, now or before
    blocks_gone = [False] * n
    count = n
    body = sum(cur)
    ib, itok = image_bytes, image_tokens
    new: set[int] = set()
    cut_at = cut
    block_items = [i for i in range(n) if items[i].has_blocks]
    protected = set(range(max(0, n - PROTECTED), n))
    guarded = pairs_rules.protected_batches(items, protected) if pairs else set()

    def current() -> int:
        return estimate(overhead + body + max(count - 1, 0), ib, itok)

    def drop_blocks_after(seq: int) -> None:
        nonlocal body
        for j in block_items:
            if alive[j] and not done[j] and not blocks_gone[j] and items[j].seq > seq:
                length = unblocked_len(items[j])
                body += length - cur[j]
                cur[j] = length
                blocks_gone[j] = True

    if cut_at is not None:
        drop_blocks_after(cut_at)

    def elide(i: int) -> None:
        nonlocal body, count, ib, itok, cut_at
        item = items[i]
        if cut_at is None or item.seq < cut_at:
            cut_at = item.seq
            drop_blocks_after(item.seq)
        length = marker_len(item)
        body += length - cur[i]
        cur[i] = length
        done[i] = True
        if item.kind == "image":
            ib -= item.image_bytes
            itok -= item.image_tokens
        new.add(item.seq)
        if pairs and item.kind == "assistant":
            for r in item.results:
                if alive[r]:
                    alive[r] = False
                    body -= cur[r]
                    count -= 1
                    if not items[r].elided:
                        new.add(items[r].seq)

    for phase in (("result", "image"), ("assistant", "summary", "closed")):
        for i in range(n):
            if current() <= low_water:
                return new, current()
            item = items[i]
            if item.kind not in phase or done[i] or not alive[i] or i in protected:
                continue
            if pairs and item.kind == "assistant" and not pairs_rules.may_elide_batch(items, i, guarded):
                continue
            elide(i)
    return new, current()
