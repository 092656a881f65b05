"""The window: a pure, incremental fold of a session's events into requests and their records.

``Window.feed`` takes every event of the session in seq order (all contexts); ``Window.build``
decides the next request of a context and the ``llm.req`` fields that record the decision. The
build is a deterministic function of the events fed and its arguments, so replay, feeding the
events before a request and building with what that request recorded, gets the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from nodwyn.errors import CorruptLogError, NotFoundError
from nodwyn.values.content import AssistantMessage, Origin
from nodwyn.values.events import (
    CTX_CLOSE,
    CTX_OPEN,
    CTX_WIDEN,
    KINDS,
    LLM_REQ,
    MAIN_CTX,
    MODEL_SWITCH,
    RESULT_FOLD,
    SESSION_RESUME,
    SESSION_START,
    SUMMARY_ADD,
    SUMMARY_REVOKE,
    CtxClose,
    CtxOpen,
    CtxWiden,
    Event,
    LlmReq,
    ModelSwitch,
    ResultFold,
    SessionResume,
    SessionStart,
    SummaryAdd,
    SummaryRevoke,
    WithheldImage,
    decode,
)
from nodwyn.values.recipe import Flag, Recipe, Rules, Tuning
from nodwyn.values.request import Request, ToolSpec
from nodwyn.window import encode, units
from nodwyn.window.caps import _cap_for, _is_fs_read
from nodwyn.window.contexts import Context, _Contexts, _replies_between
from nodwyn.window.entries import _Entry, _entry_of, _payload_of
from nodwyn.window.estimate import BYTES_PER_TOKEN, _tokens_of_bytes, estimate
from nodwyn.window.headers import _with_header
from nodwyn.window.moved import _Snapshot
from nodwyn.window.moved import moved as moved_from
from nodwyn.window.render import (
    Item,
    _assistant_message,
    _marker_message,
    _Params,
    _RenderCache,
    _run_message,
    piece,
    render,
)
from nodwyn.window.start import Start, _start_of
from nodwyn.window.summaries import Summary, _summary_of, accepted
from nodwyn.window.turn import TurnOptions, recorded_turn, recorded_withheld

_NO_WITHHELD: Mapping[str, str] = {}
_PLAIN_TURN = TurnOptions()


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """What a build keeps, elides and trims, decided before its request is rendered."""

    line: int  # the mark the request is held to: high water, or the ceiling under headroom
    headroom: bool  # the turn asked for headroom and the rules allow it
    before: int  # the estimate before this build elides anything new (how full the window is)
    trimmed: bool  # ``before`` passed ``line``
    elided: frozenset[int]  # seqs newly elided (sticky from this request on)
    target: int  # what a trim aims for (low water, or v20's target)
    head: int | None = None  # v20: the head boundary a trim kept
    predicted: int | None = None  # a trim's own account of the estimate it leaves (None: no trim)


@dataclass(frozen=True, slots=True, kw_only=True)
class Build:
    request: Request
    # the llm.req the build decided (the recorder adds start, model, cache ask)
    record: LlmReq = field(hash=False)
    canonical: bytes  # canonical_bytes(request_to_json(request))
    digest: str  # digest(request_to_json(request))
    seqs: tuple[int, ...] = ()  # the seq each message came from (user.msg, llm.resp, tool.result, ...)
    decision: Decision  # what the build decided (the estimate before trimming, the new elisions, ...)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Shown:
    """One render of a context: its parts, the overhead its estimate counts, and the estimate."""

    snap: _Snapshot
    cache: _RenderCache
    items: list[Item]
    overhead: int
    estimate: int


@dataclass(frozen=True, slots=True, kw_only=True)
class _Rendered:
    """The request a decision leaves: the render it came from, and its canonical form."""

    shown: _Shown
    request: Request
    canonical: bytes
    digest: str
    seqs: tuple[int, ...]


class Window:
    def __init__(self, *, flags: frozenset[Flag] | None = None, tuning: Tuning | None = None) -> None:
        """``flags`` and ``tuning`` are for measuring rules apart (``bench/window_workloads.py``):
        builds then use those flags (and the recipe's own) instead of the version's, and those
        constants (None: the recipe's own). A session and replay never pass them: what a log
        means comes from its recipe alone. The rules are resolved once per recipe event (``_rules``)."""
        self._flags = flags
        self._tuning = tuning
        self._heads: dict[str, int] = {}  # v20: each context's head boundary, from its llm.req
        self._sizes: dict[int, int] = {}  # v20: content bytes of each entry, measured once
        self._contexts = _Contexts()
        # per open context (by id): its view's last render, and the parts of its last request
        self._renders: dict[str, _RenderCache] = {}
        self._last_reqs: dict[str, _Snapshot] = {}
        self._recipe: Recipe | None = None
        self._rules: Rules | None = None  # the recipe's, resolved when it is fed
        self._recipe_seqs: list[int] = []
        self._elided: frozenset[int] = frozenset()
        self._stale: frozenset[int] = frozenset()
        self._folds: dict[int, str] = {}
        # folds per view (by the id of the context whose view shows the target): a view's count
        # depends only on events from its start, so a window built from the start point agrees
        self._fold_versions: dict[str, int] = {}
        self._summaries: dict[int, Summary] = {}
        self._revoked: set[int] = set()
        self._entries: dict[int, _Entry] = {}
        self._events: dict[int, Event] = {}  # conversation events, for summaries' source digests
        self._first_seq = 0
        self._last_seq = 0
        self._tools: dict[tuple[str, ...] | None, tuple[tuple[ToolSpec, ...], bytes]] = {}

    # -- feeding -----------------------------------------------------------------------------

    @property
    def recipe(self) -> Recipe | None:
        return self._recipe

    @property
    def last_seq(self) -> int:
        return self._last_seq

    @property
    def start(self) -> Start:
        """Where the window now starts (see ``window.start``)."""
        return _start_of(
            self._contexts,
            first_seq=self._first_seq,
            next_seq=self._last_seq + 1,
            recipe_seqs=self._recipe_seqs,
            whole=bool(self._summaries),
        )

    def feed(self, event: Event) -> None:
        if event.seq <= self._last_seq:
            raise CorruptLogError(
                f"event seq {event.seq} ({event.kind}) follows seq {self._last_seq}; feed events in seq order"
            )
        if event.kind not in KINDS:
            raise CorruptLogError(f"event seq {event.seq} has unknown kind {event.kind!r}")
        entry = _entry_of(event)
        if entry is not None:
            if entry.kind in ("user", "plan") and self._recipe is not None:
                entry = _with_header(entry, self._recipe)
            self._contexts.add(entry, event.kind)
            self._entries[entry.seq] = entry
            self._events[entry.seq] = event
        else:
            handler = _HANDLERS.get(event.kind)
            if handler is not None:
                handler(self, event)
        if self._first_seq == 0:
            self._first_seq = event.seq
        self._last_seq = event.seq

    def feed_all(self, events: Iterable[Event]) -> None:
        for event in events:
            self.feed(event)

    def _recipe_event(self, event: Event) -> None:
        p = decode(event)
        recipe = p.recipe if isinstance(p, SessionStart | SessionResume) else None
        if recipe is None:
            raise CorruptLogError(
                f"{event.kind} at seq {event.seq} records no recipe (a legacy session); "
                "a window needs the recipe, so only the transcript replays (`nodwyn replay SESSION`)"
            )
        self._set_recipe(event.seq, recipe)

    def _set_recipe(self, seq: int, recipe: Recipe) -> None:
        self._recipe = recipe
        self._rules = self._rules_of(recipe)
        self._recipe_seqs.append(seq)
        self._tools = {}

    def _switch(self, event: Event) -> None:
        """A model switch that resized the window (ADR 0300): its recipe is in force from here
        on, and each context's v20 head is sized again for the new budget at its next request."""
        recipe = _payload_of(event, ModelSwitch).recipe
        if recipe is not None:
            self._set_recipe(event.seq, recipe)
            self._heads = {}

    def _rules_of(self, recipe: Recipe) -> Rules:
        if self._flags is None and self._tuning is None:
            return recipe.rules
        own = recipe.rules
        flags = own.flags if self._flags is None else self._flags | frozenset(recipe.extra_flags)
        if self._tuning is not None:  # one set of constants at every cap
            return Rules.of(recipe.version, flags, self._tuning)
        return Rules.of(recipe.version, flags, own.tuning, own.wide_tuning)

    @staticmethod
    def _growth_tuning(rules: Rules, cap: int) -> Tuning:
        """The constants a growth trim uses: the recipe's (v22: its wide set for a cap above
        3,072), deepened for a scaled cap (v21)."""
        t = rules.tuning_for(cap)
        return units._cap_tuning(t, cap) if rules.scaled_cap or rules.wide_cap else t

    def _open(self, event: Event) -> None:
        self._contexts.open(event.seq, event.ctx, _payload_of(event, CtxOpen))

    def _close(self, event: Event) -> None:
        entry = self._contexts.close(event.seq, _payload_of(event, CtxClose))
        if entry is not None:
            self._entries[entry.seq] = entry
        self._drop_ended()

    def _widen(self, event: Event) -> None:
        self._contexts.widen(event.seq, _payload_of(event, CtxWiden))
        self._drop_ended()

    def _drop_ended(self) -> None:
        """Forget the renders and last requests of ended contexts: they are never built again."""
        for held in (self._renders, self._last_reqs):
            for cid in [cid for cid in held if cid not in self._contexts.open_ids]:
                del held[cid]

    def _fold(self, event: Event) -> None:
        p = _payload_of(event, ResultFold)
        entry = self._entries.get(p.target)
        if entry is None or entry.kind != "result":
            raise CorruptLogError(
                f"result.fold at seq {event.seq}: target {p.target} is not the seq of an earlier tool.result"
            )
        self._folds[p.target] = p.text
        view = self._contexts.view_of(entry.ctx)
        self._fold_versions[view.id] = self._fold_versions.get(view.id, 0) + 1
        self._mark_stale(view, p.target, event.seq)

    def _summary_add(self, event: Event) -> None:
        p = _payload_of(event, SummaryAdd)
        source = sorted((e for s, e in self._events.items() if p.first <= s <= p.last), key=lambda e: e.seq)
        self._summaries[event.seq] = _summary_of(event.seq, event.ctx, p, source)
        self._elided = frozenset()

    def _summary_revoke(self, event: Event) -> None:
        target = _payload_of(event, SummaryRevoke).summary
        if target not in self._summaries:
            raise CorruptLogError(f"summary.revoke at seq {event.seq}: {target} is not a summary.add seq")
        self._revoked.add(target)
        self._elided = frozenset()

    def _req(self, event: Event) -> None:
        p = _payload_of(event, LlmReq)
        if p.head is not None:
            self._heads[event.ctx] = p.head
        new = set(p.elided) - self._elided
        if new:
            self._elided = self._elided | new
            lowest: dict[str, int] = {}
            for s in new:
                view = self._view_of_seq(s)
                if view is not None:
                    lowest[view.id] = min(s, lowest.get(view.id, s))
            for vid, low in lowest.items():
                self._mark_stale(self._contexts.by_id[vid], low, event.seq)
        self._snapshot_req(event.ctx, p)

    def _view_of_seq(self, seq: int) -> Context | None:
        entry = self._entries.get(seq)
        if entry is not None:
            return self._contexts.view_of(entry.ctx)
        summary = self._summaries.get(seq)
        if summary is not None:
            return self._contexts.view_of(summary.ctx)
        return None

    def _mark_stale(self, view: Context, low: int, high: int) -> None:
        marked = _replies_between(view, low, high)
        if marked and not self._stale.issuperset(marked):
            self._stale = self._stale | frozenset(marked)

    def _snapshot_req(self, ctx: str, req: LlmReq) -> None:
        """Remember the request an ``llm.req`` recorded, to tell the next one's extension from a move."""
        c = self._contexts.by_id.get(ctx)
        if self._recipe is None or c is None or c.state != "open" or c.narrowed_by is not None:
            return
        try:
            parts = self._parts(
                c, req.origin, recorded_turn(req), recorded_withheld(req), self._elided, self._stale
            )
        except NotFoundError:
            self._last_reqs.pop(c.id, None)
            return
        self._last_reqs[c.id] = parts[0]

    # -- building ----------------------------------------------------------------------------

    def _params(
        self,
        view: Context,
        recipe: Recipe,
        origin: Origin,
        withheld: Mapping[str, str],
        elided: frozenset[int],
        stale: frozenset[int],
    ) -> _Params:
        rules = self._need_rules()
        summaries: tuple[Summary, ...] = ()
        if rules.summaries and self._summaries:
            mine = [s for s in self._summaries.values() if self._contexts.view_of(s.ctx) is view]
            if mine:
                summaries = accepted(mine, self._revoked, view.entries, superseded=rules.superseded)
        held: tuple[tuple[str, str], ...] = ()
        if rules.images and withheld:
            # only what the request can show: an image of the view neither elided nor in a span
            # a summary replaces (the record lists those shown; replay builds with that list)
            def shown(seq: int) -> bool:
                return seq not in elided and not any(x.first <= seq <= x.last for x in summaries)

            held = tuple(
                sorted(
                    (d, r) for d, r in withheld.items() if any(shown(seq) for seq in view.images.get(d, ()))
                )
            )
        return _Params(
            recipe=recipe,
            rules=rules,
            origin=origin if rules.blocks else None,
            withheld=held,
            elided=elided,
            stale=stale,
            folds=self._fold_versions.get(view.id, 0) if rules.folds else 0,
            summaries=summaries,
            version=view.version,
        )

    def _offered(
        self, c: Context, recipe: Recipe, turn: TurnOptions
    ) -> tuple[tuple[ToolSpec, ...], bytes, list[str] | None]:
        names: tuple[str, ...] | None = None
        if self._need_rules().tool_subsets:
            names = (
                () if turn.no_tools else turn.offered_tools if turn.offered_tools is not None else c.offered
            )
        key = None if names is None else tuple(sorted(set(names)))
        cached = self._tools.get(key)
        if cached is None:
            if key is None:
                subset = recipe.tools
            else:
                catalog = {t.name for t in recipe.tools}
                unknown = [n for n in key if n not in catalog]
                if unknown:
                    raise NotFoundError(
                        f"offered tool {unknown[0]!r} is not in the session's frozen catalog "
                        f"({', '.join(sorted(catalog)) or 'empty'}); offer catalog tools only"
                    )
                subset = tuple(t for t in recipe.tools if t.name in set(key))
            cached = (subset, encode._tools_bytes(subset))
        self._tools[key] = cached
        subset, raw = cached
        return subset, raw, None if key is None or turn.no_tools else [t.name for t in subset]

    def _parts(
        self,
        c: Context,
        origin: Origin,
        turn: TurnOptions,
        withheld: Mapping[str, str],
        elided: frozenset[int],
        stale: frozenset[int],
    ) -> tuple[_Snapshot, _RenderCache, list[Item]]:
        recipe = self._recipe
        assert recipe is not None
        params = self._params(c, recipe, origin, withheld, elided, stale)
        cache = self._renders[c.id] = render(self._renders.get(c.id), c, params, self._folds, withheld)
        items = cache.messages()
        _, tools, _ = self._offered(c, recipe, turn)
        limits_out = recipe.limits.output_reserve if params.rules.output_cap else None
        snap = _Snapshot(
            params=params,
            system=encode._system_bytes(cache.system(c)),
            tools=tools,
            max_output=encode.max_output_bytes(limits_out),
            pieces=cache.pieces,
            length=len(cache.pieces),
            plan=cache.pending_plan.piece if cache.pending_plan is not None else None,
        )
        return snap, cache, items

    def _shown(
        self,
        c: Context,
        origin: Origin,
        turn: TurnOptions,
        withheld: Mapping[str, str],
        elided: frozenset[int],
        stale: frozenset[int],
    ) -> _Shown:
        """The context rendered with ``elided`` left out, and that render's estimate (its overhead
        counts the whole catalog's tools, whatever the turn offers)."""
        recipe = self._need_recipe()
        _, full_tools, _ = self._offered(c, recipe, _PLAIN_TURN)
        snap, cache, items = self._parts(c, origin, turn, withheld, elided, stale)
        overhead = encode.overhead(snap.system, full_tools, snap.max_output)
        body = cache.body + (len(cache.pending_plan.piece) if cache.pending_plan is not None else 0)
        total = overhead + body + max(len(items) - 1, 0)
        est = estimate(total, cache.image_bytes, cache.image_tokens)
        return _Shown(snap=snap, cache=cache, items=items, overhead=overhead, estimate=est)

    def _need_rules(self) -> Rules:
        self._need_recipe()
        assert self._rules is not None  # set with the recipe
        return self._rules

    def _conversation(self, c: Context) -> tuple[int, int]:
        """The view's conversation so far in tokens (content, uncut), and this request's number
        (the view's replies plus one): the growth rule's C and requests."""
        total = sum(self._size(e) for e in c.entries)
        return _tokens_of_bytes(total), sum(e.kind == "assistant" for e in c.entries) + 1

    def _size(self, e: _Entry) -> int:
        """An entry's content bytes (``units._content_bytes``), measured once."""
        size = self._sizes.get(e.seq)
        if size is None:
            size = self._sizes[e.seq] = units._content_bytes(e)
        return size

    def _capped_conversation(self, c: Context) -> int:
        """v22 (``shown_growth``): the view's conversation in tokens with each result as its cap
        shows it (the recipe's cap; twice it for an fs-read under v19's wide reads)."""
        recipe, rules = self._need_recipe(), self._need_rules()
        limit = recipe.limits.max_result_tokens
        total = 0
        for e in c.entries:
            size = self._size(e)
            if e.kind == "result":
                fs_read = _is_fs_read(e.name, e.has_range)
                shown = _cap_for(limit, fs_read=fs_read, wide_reads=rules.wide_reads) * BYTES_PER_TOKEN
                size = min(size, shown)
            total += size
        return _tokens_of_bytes(total)

    def _need_recipe(self) -> Recipe:
        if self._recipe is None:
            raise CorruptLogError(
                f"no session.start or session.resume with a recipe among the {self._last_seq} events fed; "
                "a window needs the recipe first"
            )
        return self._recipe

    def build(
        self,
        ctx: str = MAIN_CTX,
        *,
        origin: Origin,
        turn: TurnOptions = _PLAIN_TURN,
        withheld: Mapping[str, str] = _NO_WITHHELD,
    ) -> Build:
        """The next request of context ``ctx`` to the model at ``origin``: decide what it keeps,
        elides and trims, render the request that leaves, record the decision as its ``llm.req``."""
        c = self._contexts.buildable(ctx)
        shown = self._shown(c, origin, turn, withheld, self._elided, self._stale)
        decision = self._decide(c, shown, turn)
        rendered = self._render(c, origin, turn, withheld, decision, shown)
        return Build(
            request=rendered.request,
            record=self._record(c, origin, turn, decision, rendered),
            canonical=rendered.canonical,
            digest=rendered.digest,
            seqs=rendered.seqs,
            decision=decision,
        )

    def _decide(self, c: Context, shown: _Shown, turn: TurnOptions) -> Decision:
        """What the request elides, from the render of the sticky elided set: results left out
        with their newly elided batch and, when the estimate passes the line (high water, or the
        ceiling under headroom), what the trim chooses (v20's units or v16's entries)."""
        recipe, rules = self._need_recipe(), self._need_rules()
        limits = recipe.limits
        headroom = rules.headroom and turn.headroom
        line = limits.ceiling if headroom else limits.high_water
        decision = Decision(
            line=line,
            headroom=headroom,
            before=shown.estimate,
            trimmed=shown.estimate > line,
            elided=frozenset(s for s in shown.cache.omitted if s not in self._elided),
            target=limits.low_water,
        )
        if not decision.trimmed:
            return decision
        return self._trim(c, shown, decision)

    def _trim(self, c: Context, shown: _Shown, decision: Decision) -> Decision:
        """The trim's choice: entries oldest first, results before replies, to low water (v16);
        with v20's rules whole units past a kept head, to a target from the run's growth."""
        recipe, rules = self._need_recipe(), self._need_rules()
        limits, items = recipe.limits, shown.items
        head: int | None = None
        keep: int | None = None
        if rules.head:
            head = self._heads.get(c.id)
            if head is None:
                head = units._head_boundary(
                    items,
                    overhead=shown.overhead,
                    budget=limits.high_water,
                    t=rules.tuning_for(limits.max_result_tokens),
                )
            # while every unit fits in the head, it keeps them all (and is not fixed yet)
            keep = head if head is not None else self._last_seq + 1
        conversation, requests = self._conversation(c) if rules.growth else (0, 0)
        wide = rules.shown_growth and rules.wide_at(limits.max_result_tokens)
        capped = self._capped_conversation(c) if rules.growth and wide else None
        params = shown.cache.params
        chosen = units.choose(
            items,
            overhead=shown.overhead,
            image_bytes=shown.cache.image_bytes,
            image_tokens=shown.cache.image_tokens,
            budget=limits.high_water,
            low_water=limits.low_water,
            units=rules.units,
            growth=self._growth_tuning(rules, limits.max_result_tokens) if rules.growth else None,
            conversation=conversation,
            requests=requests,
            keep_before=keep,
            pairs=rules.pairs,
            cut=min(decision.elided) if decision.elided else None,
            shown=capped,
            sizes=units.Sizes(
                marker_len=lambda item: len(piece(_marker_message(item))),
                run_len=lambda first, last: len(piece(_run_message(first, last))),
                unblocked_len=lambda item: len(piece(self._unblocked(item, params))),
            ),
        )
        return replace(
            decision,
            elided=decision.elided | chosen.elided,
            target=chosen.target,
            head=head,
            predicted=chosen.estimate,
        )

    def _render(
        self,
        c: Context,
        origin: Origin,
        turn: TurnOptions,
        withheld: Mapping[str, str],
        decision: Decision,
        shown: _Shown,
    ) -> _Rendered:
        """The request the decision leaves, its canonical bytes and digest: ``shown`` (the render
        of the sticky elided set) as it is, or rendered again with the new elisions (replies with
        blocks after the earliest of them go stale: their blocks no longer go back)."""
        rules = self._need_rules()
        if decision.elided:
            stale = self._stale
            marked = _replies_between(c, min(decision.elided), self._last_seq + 1)
            if marked:
                stale = stale | frozenset(marked)
            shown = self._shown(c, origin, turn, withheld, self._elided | decision.elided, stale)
        cache, snap = shown.cache, shown.snap
        subset, _, _ = self._offered(c, self._need_recipe(), turn)
        plan = cache.pending_plan
        request = Request(
            system=cache.system(c),
            tools=subset,
            messages=tuple(cache.msgs) if plan is None else (*cache.msgs, plan.message),
            max_output=self._need_recipe().limits.output_reserve if rules.output_cap else None,
        )
        end = encode.tail(snap.plan, not cache.items, snap.system, snap.tools)
        hasher = cache.hasher.copy()
        hasher.update(end)
        return _Rendered(
            shown=shown,
            request=request,
            canonical=cache.canonical(end),
            digest="sha256:" + hasher.hexdigest(),
            seqs=tuple(cache.seqs) if plan is None else (*cache.seqs, plan.seq),
        )

    def _record(
        self, c: Context, origin: Origin, turn: TurnOptions, decision: Decision, rendered: _Rendered
    ) -> LlmReq:
        """The ``llm.req`` that records the decision and what the request shows (the recorder
        adds start, model and cache ask)."""
        recipe, rules = self._need_recipe(), self._need_rules()
        shown = rendered.shown
        _, _, offered = self._offered(c, recipe, turn)
        trimmed, v20 = decision.trimmed, decision.trimmed and rules.unit_trim
        tools_on = rules.tool_subsets
        held = tuple(_withheld(shown.items)) if rules.images else ()
        moved = moved_from(self._last_reqs.get(c.id), shown.snap, bool(decision.elided))
        return LlmReq(
            model=origin.model,
            origin=origin,
            digest=rendered.digest,
            elided=tuple(sorted(decision.elided)),
            estimate=shown.estimate,
            trim=bool(decision.elided),
            high_water=decision.line if trimmed or decision.headroom else None,
            below_low_blocked=True if trimmed and shown.estimate > decision.target else None,
            target=decision.target if v20 else None,
            head=decision.head if v20 else None,
            no_tools=True if tools_on and turn.no_tools else None,
            offered_tools=tuple(offered) if tools_on and not turn.no_tools and offered is not None else None,
            withheld_images=held or None,
            max_output=recipe.limits.output_reserve if rules.output_cap else None,
            headroom=True if decision.headroom else None,
            moved=tuple(moved) if moved else None,
        )

    def _unblocked(self, item: Item, params: _Params) -> AssistantMessage:
        entry = self._entries[item.seq]
        return _assistant_message(entry, params, with_blocks=False)


def _withheld(items: list[Item]) -> list[WithheldImage]:
    seen: set[str] = set()
    out = []
    for item in items:
        for digest, reason in item.withheld:
            if digest not in seen:
                seen.add(digest)
                out.append(WithheldImage(digest=digest, reason=reason))
    return out


_HANDLERS = {
    SESSION_START: Window._recipe_event,
    SESSION_RESUME: Window._recipe_event,
    CTX_OPEN: Window._open,
    CTX_CLOSE: Window._close,
    CTX_WIDEN: Window._widen,
    RESULT_FOLD: Window._fold,
    SUMMARY_ADD: Window._summary_add,
    SUMMARY_REVOKE: Window._summary_revoke,
    LLM_REQ: Window._req,
    MODEL_SWITCH: Window._switch,
}


def build_window(
    events: Iterable[Event],
    ctx: str = MAIN_CTX,
    *,
    origin: Origin,
    turn: TurnOptions = _PLAIN_TURN,
    withheld: Mapping[str, str] = _NO_WITHHELD,
) -> Build:
    """Feed every event, then build: the same as ``Window`` fed and built by hand."""
    w = Window()
    w.feed_all(events)
    return w.build(ctx, origin=origin, turn=turn, withheld=withheld)
