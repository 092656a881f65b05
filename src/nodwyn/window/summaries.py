"""Revocable summaries (window-v2, ``Rules.summaries``).

``summary.add {first, last, text, source_digest}`` offers an assistant message that replaces the
entries of its context's view with seqs in ``[first, last]``; ``summary.revoke {summary}`` takes it
back. A summary is used (is *accepted*) when:

* it is not revoked, and its ``source_digest`` is :func:`source_digest` of the span's conversation
  events as the window was fed them (else it is *stale*, and its source shows);
* its span ends before the view's second-latest person's message, so the latest two user turns
  stay outside replacement;
* its span does not split a tool call from its result (a batch and all its results are in or out);
* no newer accepted summary overlaps it (newer overlapping summaries supersede older ones; the
  superseded one's text is never shown, its source outside the newer span is). With
  ``Rules.superseded`` (a recipe flag of its own, ADR 0300) any newer overlapping summary of the
  view supersedes it, accepted or not: when the newer one is revoked or goes stale, its source
  shows, never the older summary's text (the seed: "dropped/stale caches expose source, not
  superseded cache text"). Without the flag an older log rebuilds as it was built.

A lifecycle change (add or revoke) resets the sticky elided set derived from earlier requests
before the next window is rebuilt, and a window whose log has a summary is held whole by the start
tracker. Later edits cannot change an earlier request: replay folds only the events before it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import orjson

from nodwyn.errors import CorruptLogError
from nodwyn.values.events import GATE_PLAN, LLM_RESP, TOOL_RESULT, USER_MSG, Event, SummaryAdd
from nodwyn.window.entries import _Entry

_SOURCE_KINDS = frozenset({USER_MSG, LLM_RESP, TOOL_RESULT, GATE_PLAN})


def source_digest(events: Iterable[Event]) -> str:
    """The digest a summary of these events records: over the conversation events among them.

    Pass the log's events with seqs in the summary's span (any context); only ``user.msg``,
    ``llm.resp``, ``tool.result`` and ``gate.plan`` count, as ``[seq, kind, ctx, data]``.
    """
    rows = [[e.seq, e.kind, e.ctx, e.data] for e in events if e.kind in _SOURCE_KINDS]
    return "sha256:" + hashlib.sha256(orjson.dumps(rows, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    seq: int
    ctx: str
    first: int
    last: int
    text: str
    stale: bool


def _summary_of(seq: int, ctx: str, add: SummaryAdd, source: Iterable[Event]) -> Summary:
    """The summary a ``summary.add`` at ``seq`` in ``ctx`` offers; ``source``: the events fed with
    seqs in its span (its digest tells a stale summary)."""
    if not 0 < add.first <= add.last < seq:
        raise CorruptLogError(
            f"summary.add at seq {seq}: first/last must be seqs before it with first <= last"
        )
    return Summary(
        seq=seq,
        ctx=ctx,
        first=add.first,
        last=add.last,
        text=add.text,
        stale=source_digest(source) != add.source_digest,
    )


def summary_text(s: Summary) -> str:
    return f"[summary of seq {s.first}-{s.last}]\n\n{s.text}"


def _splits_pairs(entries: Sequence[_Entry], first: int, last: int) -> bool:
    batch_of: dict[str, int] = {}
    pending: dict[int, set[str]] = {}
    for e in entries:
        if e.kind == "assistant":
            for call in e.reply.calls:
                batch_of[call.id] = e.seq
            pending[e.seq] = {c.id for c in e.reply.calls}
        elif e.kind == "result":
            b = batch_of.get(e.call_id)
            if b is None:
                continue
            if (first <= b <= last) != (first <= e.seq <= last):
                return True
            pending.get(b, set()).discard(e.call_id)
    # a batch inside the span whose results are not all in yet would split when they arrive
    return any(first <= b <= last and left for b, left in pending.items())


def _overlap(a: Summary, b: Summary) -> bool:
    return not (a.last < b.first or b.last < a.first)


def accepted(
    summaries: Iterable[Summary], revoked: set[int], entries: Sequence[_Entry], *, superseded: bool = False
) -> tuple[Summary, ...]:
    """The summaries a view uses, oldest first. ``superseded``: any newer overlapping summary
    hides an older one, whether it is used or not (ADR 0300)."""
    users = [e.seq for e in entries if e.kind == "user"]
    if len(users) < 2:
        return ()
    keep_from = users[-2]
    chosen: list[Summary] = []
    newer: list[Summary] = []
    for s in sorted(summaries, key=lambda s: -s.seq):
        hidden = superseded and any(_overlap(s, n) for n in newer)
        newer.append(s)
        if hidden or s.seq in revoked or s.stale or s.last >= keep_from:
            continue
        if not any(e.seq >= s.first and e.seq <= s.last for e in entries):
            continue
        if any(_overlap(s, c) for c in chosen):
            continue
        if _splits_pairs(entries, s.first, s.last):
            continue
        chosen.append(s)
    return tuple(sorted(chosen, key=lambda s: s.first))
