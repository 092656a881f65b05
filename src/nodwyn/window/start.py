"""The start tracker: where a window built from the events from its start equals one built from all.

Nothing before the point where the conversation was last cut reaches a later window. A context
that may still be built (open, and not hidden forever behind a lasting narrowing) draws on its
events from where it opened (the main context: from the session's first event). The start is the
earliest of those. A window built from the events at and after ``seq``, preceded by the few
earlier events in ``keep`` (the recipe in force, the ``ctx.open`` of every context still open),
is the window built from every event: ``tests/window/test_start.py`` compares the two at every
point of random sessions. A log with a summary is held whole, since a summary may replace a span
the tracker knows nothing of. The tracker is kept as events are fed; asking costs the number of
open contexts, not the log.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from nodwyn.errors import CorruptLogError
from nodwyn.values.events import Event, LlmReq
from nodwyn.window.contexts import Context, _Contexts


@dataclass(frozen=True, slots=True, kw_only=True)
class Start:
    seq: int  # the first event a window needs, in order, from here on
    keep: tuple[int, ...]  # earlier events it also needs (recipe, ctx.open of open contexts)


def _hidden_forever(contexts: _Contexts, c: Context) -> bool:
    return c.narrowed_by is not None and contexts.lasting_below(contexts.by_id[c.narrowed_by])


def _start_of(
    contexts: _Contexts, *, first_seq: int, next_seq: int, recipe_seqs: list[int], whole: bool
) -> Start:
    if whole:
        return Start(seq=first_seq, keep=())
    opened = [contexts.by_id[cid] for cid in contexts.open_ids]
    starts = [first_seq if c.kind == "main" else c.opened for c in opened if not _hidden_forever(contexts, c)]
    start = min(starts) if starts else next_seq
    i = bisect_left(recipe_seqs, start)
    keep = [recipe_seqs[i - 1]] if i > 0 else []
    keep.extend(c.opened for c in opened if c.kind != "main" and c.opened < start)
    return Start(seq=start, keep=tuple(sorted(keep)))


def recorded_start(req: Event) -> Start | None:
    """The start point an ``llm.req`` recorded (``start: {seq, keep}``), if it is well formed:
    ``seq`` in ``1..req.seq``, ``keep`` sorted distinct seqs before it. Else ``None``: the caller
    reads from seq 1 (the hint only saves reading; the digest check makes it safe)."""
    try:
        start = LlmReq.from_data(req.data).start
    except CorruptLogError:
        return None
    if start is None or not 1 <= start.seq <= req.seq:
        return None
    keep = start.keep
    if any(not 1 <= k < start.seq for k in keep) or list(keep) != sorted(set(keep)):
        return None
    return Start(seq=start.seq, keep=keep)
