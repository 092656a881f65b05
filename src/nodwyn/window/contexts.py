"""Contexts: the main conversation, narrowings and sub-contexts (see docs/adr/0013).

* ``main`` always exists.
* ``ctx.open {id, kind: "sub", system?, offered_tools?, parent_call?}`` in context P starts a
  sub-agent's conversation: its own events (``ctx`` = id), under its own system prompt (or the
  session's) and, unless a turn says otherwise, the offered subset of the catalog. It never shows
  in P; its answer returns to P as the ``tool.result`` of ``parent_call``, which the agent appends.
* ``ctx.open {id, kind: "narrow", system?, lasting?}`` in P narrows P: requests are built in the
  narrowing, from the narrowing point on, under its system prompt (or the session's). P is hidden
  while it is open; a context has at most one open narrowing.
  ``ctx.widen {id}`` ends it and its conversation joins P's, in seq order; ``ctx.close {id,
  result?}`` ends it and folds it away: its conversation and everything in it (plans, blocks)
  leave with it, and its ``result``, if any, shows in P as an assistant message at the close.
  A ``lasting`` narrowing (compaction) is never widened or closed, so nothing before it, in P or
  above, reaches a later window: that is where the start tracker cuts.
* Ending a context ends its open descendants. An event in a context that is not open is refused.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from dataclasses import dataclass, field
from heapq import merge
from typing import Literal

from nodwyn.errors import CorruptLogError, NotFoundError
from nodwyn.values.events import CTX_CLOSE, CTX_OPEN, CTX_WIDEN, MAIN_CTX, CtxClose, CtxOpen, CtxWiden
from nodwyn.window.entries import _Entry

_CtxKind = Literal["main", "narrow", "sub"]


@dataclass(slots=True, kw_only=True)
class Context:
    id: str
    kind: _CtxKind
    parent: str | None
    opened: int  # seq of its ctx.open (0 for main)
    system: str | None = None
    offered: tuple[str, ...] | None = None
    lasting: bool = False
    state: Literal["open", "closed", "widened"] = "open"
    ended: int = 0
    into: str | None = None  # the context a widened narrowing joined
    narrowed_by: str | None = None  # its open narrowing, if any
    children: list[str] = field(default_factory=list)
    entries: list[_Entry] = field(default_factory=list)  # the view: own + widened, in seq order
    block_replies: list[int] = field(default_factory=list)  # seqs of replies in the view with blocks
    images: dict[str, list[int]] = field(default_factory=dict)  # image digest -> its user.msg seqs
    version: int = 0  # bumped when the view changes other than by appending


class _Contexts:
    def __init__(self) -> None:
        self.by_id: dict[str, Context] = {MAIN_CTX: Context(id=MAIN_CTX, kind="main", parent=None, opened=0)}
        self.open_ids: set[str] = {MAIN_CTX}

    def get_open(self, ctx: str, seq: int, kind: str) -> Context:
        c = self.by_id.get(ctx)
        if c is None:
            raise CorruptLogError(f"{kind} at seq {seq} is in context {ctx!r}, which no ctx.open opened")
        if c.state != "open":
            raise CorruptLogError(
                f"{kind} at seq {seq} is in context {ctx!r}, which was {c.state} at seq {c.ended}"
            )
        return c

    def view_of(self, ctx: str) -> Context:
        """The context whose view shows ``ctx``'s entries (following widenings)."""
        c = self.by_id[ctx]
        while c.into is not None:
            c = self.by_id[c.into]
        return c

    def add(self, entry: _Entry, kind: str) -> Context:
        c = self.get_open(entry.ctx, entry.seq, kind)
        c.entries.append(entry)
        if entry.kind == "assistant" and entry.reply.blocks:
            c.block_replies.append(entry.seq)
        for image in entry.images:
            c.images.setdefault(image.digest, []).append(entry.seq)
        return c

    def open(self, seq: int, ctx: str, p: CtxOpen) -> None:
        """Open the context a ``ctx.open`` at ``seq`` in ``ctx`` names (its fields checked by the
        codec; here what depends on the contexts so far)."""
        parent = self.get_open(ctx, seq, CTX_OPEN)
        cid, kind, lasting = p.id, p.kind, p.lasting is True
        where = f"ctx.open at seq {seq}"
        if not cid:
            raise CorruptLogError(f"{where}: id must be a non-empty string")
        if cid in self.by_id:
            raise CorruptLogError(f"{where}: context {cid!r} already exists; give each context a new id")
        if lasting and kind != "narrow":
            raise CorruptLogError(f"{where}: only a narrowing lasts (lasting is true on a {kind!r} context)")
        if kind == "narrow":
            if parent.narrowed_by is not None:
                raise CorruptLogError(
                    f"{where}: context {parent.id!r} is already narrowed by {parent.narrowed_by!r}; "
                    "open the new narrowing inside it or end it first"
                )
            parent.narrowed_by = cid
        self.by_id[cid] = Context(
            id=cid,
            kind=kind,
            parent=parent.id,
            opened=seq,
            system=p.system,
            offered=p.offered_tools,
            lasting=lasting,
        )
        parent.children.append(cid)
        self.open_ids.add(cid)

    def _end(self, c: Context, seq: int, state: Literal["closed", "widened"]) -> None:
        for child in c.children:
            ch = self.by_id[child]
            if ch.state == "open":
                self._end(ch, seq, "closed")
        c.state, c.ended = state, seq
        self.open_ids.discard(c.id)
        if c.parent is not None:
            parent = self.by_id[c.parent]
            if parent.narrowed_by == c.id:
                parent.narrowed_by = None

    def _target(self, seq: int, kind: str, cid: str) -> Context:
        where = f"{kind} at seq {seq}"
        if cid not in self.by_id:
            raise CorruptLogError(f"{where}: no context {cid!r} was opened")
        c = self.by_id[cid]
        if c.kind == "main":
            raise CorruptLogError(f"{where}: the main context cannot be ended")
        if c.state != "open":
            raise CorruptLogError(f"{where}: context {cid!r} was already {c.state} at seq {c.ended}")
        if self.lasting_below(c):
            raise CorruptLogError(f"{where}: context {cid!r} holds a lasting narrowing, which never ends")
        return c

    def lasting_below(self, c: Context) -> bool:
        if c.lasting:
            return True
        return any(self.by_id[ch].state == "open" and self.lasting_below(self.by_id[ch]) for ch in c.children)

    def close(self, seq: int, p: CtxClose) -> _Entry | None:
        """End a context; a narrowing's result becomes an entry of its parent."""
        c = self._target(seq, CTX_CLOSE, p.id)
        self._end(c, seq, "closed")
        if c.kind != "narrow" or p.result is None:
            return None
        assert c.parent is not None
        entry = _Entry(seq=seq, ctx=c.parent, kind="closed", text=p.result)
        self.by_id[c.parent].entries.append(entry)
        return entry

    def widen(self, seq: int, p: CtxWiden) -> None:
        c = self._target(seq, CTX_WIDEN, p.id)
        if c.kind != "narrow":
            raise CorruptLogError(f"ctx.widen at seq {seq}: {c.id!r} is a sub-context; close it")
        self._end(c, seq, "widened")
        assert c.parent is not None
        parent = self.by_id[c.parent]
        c.into = parent.id
        appended = not parent.entries or not c.entries or parent.entries[-1].seq < c.entries[0].seq
        parent.entries = list(merge(parent.entries, c.entries, key=lambda e: e.seq))
        for seq in c.block_replies:
            insort(parent.block_replies, seq)
        for digest, seqs in c.images.items():
            parent.images.setdefault(digest, []).extend(seqs)
        c.entries, c.block_replies = [], []
        if not appended:
            parent.version += 1

    def buildable(self, ctx: str) -> Context:
        c = self.by_id.get(ctx)
        if c is None:
            raise NotFoundError(f"no context {ctx!r} in this session; build in 'main' or an open context")
        if c.state != "open":
            raise NotFoundError(f"context {ctx!r} was {c.state} at seq {c.ended}; build in an open context")
        if c.narrowed_by is not None:
            raise NotFoundError(f"context {ctx!r} is narrowed by {c.narrowed_by!r}; build in the narrowing")
        return c


def _replies_between(view: Context, low: int, high: int) -> list[int]:
    """Seqs of the view's replies with blocks strictly between ``low`` and ``high``."""
    lo = bisect_right(view.block_replies, low)
    hi = bisect_right(view.block_replies, high - 1)
    return view.block_replies[lo:hi]
