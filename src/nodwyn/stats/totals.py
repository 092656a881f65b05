"""Session totals, fed event by event.

The token cache rate is the sum of ``cached_tokens`` over the
sum of ``prompt_tokens`` across the recorded replies that report a cache read (zero included) and
a positive prompt count, summed before dividing, across turns and models. Replies that report no
cache read, or no positive prompt, stay out of both sums. No contributing reply: the rate is
unknown (``None``), never 0%. ``prompt_tokens`` is the whole prompt (Anthropic's input + cache read
+ cache write, as the dialect normalises it).

``Aggregator`` keeps running sums and per-request rows; ``feed`` takes the next event, and
``totals()`` returns a snapshot it caches until the next event. Nothing is recomputed from the
start when a session grows.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, assert_never

from nodwyn.errors import NodwynError
from nodwyn.stats.causes import AGENT_CAUSES, Cause, event_cause, request_causes
from nodwyn.stats.cost import Cost, reply_cost
from nodwyn.stats.prefix import tolerance
from nodwyn.values.events import (
    LLM_REQ,
    LLM_RESP,
    LLM_SEEN,
    MAIN_CTX,
    SESSION_RESUME,
    SESSION_START,
    TOOL_RESULT,
    USER_MSG,
    AnyPayload,
    Bookkeeping,
    Event,
    GatePlan,
    ImportView,
    LlmReq,
    LlmResp,
    LlmSeen,
    Note,
    SessionResume,
    SessionStart,
    ToolResult,
    UserMsg,
    decode,
    decoded,
)
from nodwyn.values.model import Prices
from nodwyn.values.recipe import Recipe
from nodwyn.values.request import CacheReport, Response, Usage


def cache_rate(cached: int, prompt: int) -> float | None:
    """Cached over prompt tokens; unknown (None) without a positive prompt total."""
    return cached / prompt if prompt > 0 else None


def percent(rate: float | None) -> str:
    """A rate as every front end prints it: a whole percentage rounded half up, as the console's
    ``Math.round`` does (not Python's half to even), or ``unknown``."""
    return "unknown" if rate is None else f"{math.floor(rate * 100 + 0.5)}%"


def contributes(usage: Usage) -> bool:
    """Whether a reply counts toward the token cache rate."""
    return usage.cached_tokens is not None and usage.prompt_tokens is not None and usage.prompt_tokens > 0


_READ: Final = frozenset({SESSION_START, SESSION_RESUME, USER_MSG, LLM_REQ, LLM_RESP, LLM_SEEN})


def _damaged_reply(event: Event) -> LlmResp | None:
    """A reply whose payload does not decode still answers its request (if it names one): it
    counts as a reply whose usage is unknown."""
    req = event.data.get("req") if event.kind == LLM_RESP and isinstance(event.data, dict) else None
    if not isinstance(req, int) or isinstance(req, bool):
        return None
    return LlmResp(req=req, response=Response())


@dataclass(frozen=True, slots=True, kw_only=True)
class Sums:
    """Token and cost sums over a set of replies. Each sum covers the replies that report it."""

    requests: int = 0  # llm.req events
    replies: int = 0  # llm.resp events
    rate_replies: int = 0  # replies that count toward the cache rate
    rate_prompt: int = 0
    rate_cached: int = 0
    prompt_tokens: int = 0  # replies reporting a prompt count
    cached_tokens: int = 0  # replies reporting a cache read
    cache_write_tokens: int = 0  # replies reporting a cache write
    writes_reported: int = 0
    uncached_tokens: int = 0  # prompt - cached, over replies reporting both
    output_tokens: int = 0
    reasoning_tokens: int = 0
    no_usage: int = 0  # replies that reported no prompt count at all
    cost_usd: float = 0.0
    cost_unknown: int = 0  # replies without a price, or missing a count the cost needs

    @property
    def cache_rate(self) -> float | None:
        return cache_rate(self.rate_cached, self.rate_prompt)


def reply_sums(usage: Usage, cost: Cost | None) -> dict[str, Any]:
    """What one reply adds to each field of ``Sums`` (running sums are a ``Counter`` of the fields,
    so a reply costs a few additions; ``Sums(**counter)`` freezes them)."""
    u = usage
    add: dict[str, Any] = {"replies": 1}
    if contributes(u):
        add.update(rate_replies=1, rate_prompt=u.prompt_tokens, rate_cached=u.cached_tokens)
    if u.prompt_tokens is None:
        add["no_usage"] = 1
    else:
        add["prompt_tokens"] = u.prompt_tokens
        if u.cached_tokens is not None:
            add["uncached_tokens"] = max(u.prompt_tokens - u.cached_tokens, 0)
    if u.cached_tokens is not None:
        add["cached_tokens"] = u.cached_tokens
    if u.cache_write_tokens is not None:
        add.update(cache_write_tokens=u.cache_write_tokens, writes_reported=1)
    add["output_tokens"] = u.output_tokens or 0
    add["reasoning_tokens"] = u.reasoning_tokens or 0
    if cost is None or not cost.complete:
        add["cost_unknown"] = 1
    if cost is not None:
        add["cost_usd"] = cost.usd
    return add


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestRow:
    """One model request and, once recorded, its reply.

    ``causes``: what we did since the predecessor (the previous request in the same context) that
    may move this request's prefix. ``drop``: the reply read less from the cache than the
    predecessor's whole prompt (beyond the tolerance) with no cause recorded, so a suspected
    server miss; ``diagnosis`` confirms it from the rebuilt requests.
    """

    seq: int
    ctx: str
    model: str
    turn: int
    trim: bool
    estimate: int | None
    predecessor: int | None
    causes: tuple[Cause, ...]
    resp: int | None = None
    usage: Usage | None = None
    cost: Cost | None = None
    drop: bool = False
    cache_ask: str | None = None  # llm.req cache_ask: "ephemeral", "1h", "none"; None: not recorded
    t: str = ""  # when the request was logged (just before it was sent)
    resp_t: str | None = None  # when its reply was logged (the llm.resp event's t)
    observed: bool = False  # another agent sent it (llm.seen, an imported session): causes are the agent's
    provider: CacheReport | None = None  # the provider's own cache diagnosis, when asked (ADR 0312)

    @property
    def rate(self) -> float | None:
        if self.usage is None or not contributes(self.usage):
            return None
        assert self.usage.cached_tokens is not None and self.usage.prompt_tokens is not None
        return cache_rate(self.usage.cached_tokens, self.usage.prompt_tokens)

    @property
    def updated(self) -> int:
        return self.seq if self.resp is None else self.resp


@dataclass(frozen=True, slots=True, kw_only=True)
class Totals:
    all: Sums
    last_rate: float | None  # the latest reply's own rate (unknown if it reports none)
    last_reply: int | None  # seq of the latest llm.resp
    by_turn: tuple[tuple[int, Sums], ...]
    by_model: tuple[tuple[str, Sums], ...]
    turns: int
    last_seq: int
    fed: int  # events fed to the aggregator since it was made
    problems: tuple[str, ...] = field(default=())
    # Where the latest costs' prices came from: the session's recipe (it records them), or the
    # prices the aggregator was given (config.toml's, for a log written before recipes had them).
    prices_from: Literal["recipe", "given"] = "given"
    # The sandbox the session's latest session.start/resume recorded (None: before sandboxes) and
    # the shell results by the sandbox mode they ran under (ADR 0350).
    sandbox: str | None = None
    shell_runs: tuple[tuple[str, int], ...] = ()


_ONE_REQUEST: dict[str, Any] = {"requests": 1}


class Aggregator:
    """Totals and per-request rows kept up to date one event at a time (events in seq order).

    ``prices`` maps a model entry's name to its prices; a model without an entry has no cost.
    A recipe that records prices (``session.start``/``session.resume``) replaces them for the
    requests after it, so a session is costed at the prices it ran with; ``prices`` serve only
    logs whose recipes record none. Events at or below ``last_seq`` are ignored, so feeding an
    overlapping range is harmless.
    """

    def __init__(self, prices: Mapping[str, Prices] | None = None) -> None:
        self._given = dict(prices or {})
        self._prices = self._given
        self._prices_from: Literal["recipe", "given"] = "given"
        self._all: Counter[str] = Counter()
        self._by_turn: defaultdict[int, Counter[str]] = defaultdict(Counter)
        self._by_model: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self._rows: list[RequestRow] = []
        self._row_index: dict[int, int] = {}  # llm.req seq -> index in _rows
        self._last_req: dict[str, int] = {}  # ctx -> latest llm.req seq
        self._records: dict[int, LlmReq] = {}  # llm.req seq -> its record (latest per ctx only)
        self._pending: dict[str, list[Cause]] = {}  # ctx -> causes seen since its latest request
        self._headers_in_system = False
        self._turn = 0
        self._last_rate: float | None = None
        self._last_reply: int | None = None
        self._problems: list[str] = []
        self._snapshot: Totals | None = None
        self._sandbox: str | None = None
        self._shell_runs: dict[str, int] = {}
        self.last_seq = 0
        self.fed = 0

    # -- feeding ---------------------------------------------------------------------------

    def feed_all(self, events: Iterable[Event]) -> None:
        for event in events:
            self.feed(event)

    def feed(self, event: Event) -> None:
        """Take the next event (earlier or repeated seqs are ignored); a malformed payload of a
        kind the totals read is a problem (``problems``), not an error."""
        if event.seq <= self.last_seq:
            return
        self.last_seq = event.seq
        self.fed += 1
        self._snapshot = None
        if event.kind in _READ:
            p: AnyPayload | None
            try:
                p = decode(event)
            except NodwynError as exc:
                self._problems.append(str(exc))
                p = _damaged_reply(event)
            match p:
                case SessionStart() | SessionResume():
                    self._recipe(event.seq, p.recipe)
                    self._sandbox = p.sandbox if p.sandbox is not None else self._sandbox
                case LlmReq() | LlmSeen():
                    self._request(event, p)
                case LlmResp():
                    self._reply(event, p)
                case UserMsg():
                    if event.ctx == MAIN_CTX:  # a new turn
                        self._turn += 1
                case ToolResult() | GatePlan() | Note() | Bookkeeping() | ImportView() | None:
                    pass  # not in _READ (or a reply too damaged to count): the totals read none of them
                case _:
                    assert_never(p)
        if event.kind == TOOL_RESULT:  # a damaged result counts nowhere (the window reports it)
            result = decoded(event, TOOL_RESULT)
            if isinstance(result, ToolResult) and result.sandbox is not None:
                self._shell_runs[result.sandbox] = self._shell_runs.get(result.sandbox, 0) + 1
        if event.kind not in (LLM_REQ, LLM_RESP, LLM_SEEN):
            for ctx, pending in self._pending.items():
                cause = event_cause(event, ctx, headers_in_system=self._headers_in_system)
                if cause is not None:
                    pending.append(cause)

    def _recipe(self, seq: int, recipe: Recipe | None) -> None:
        if recipe is None:
            self._problems.append(f"seq {seq}: no recipe recorded (a legacy session)")
            return
        self._headers_in_system = not recipe.rules.in_conversation
        self._prices_from = "given" if recipe.prices is None else "recipe"
        self._prices = self._given if recipe.prices is None else dict(recipe.prices)

    def _request(self, event: Event, data: LlmReq | LlmSeen) -> None:
        """A request, counted in the totals as its context's latest: nodwyn's (llm.req), or one
        another agent sent (llm.seen, an imported session), whose causes are what the source
        records the agent did (``why``), each at this request's seq."""
        ctx = event.ctx
        previous = self._last_req.get(ctx)
        pending = self._pending.get(ctx, [])
        if isinstance(data, LlmReq):
            prev_record = self._records.get(previous) if previous is not None else None
            causes = [*pending, *request_causes(event.seq, data, prev_record, pending)]
            trim, estimate, cache_ask = data.trim, data.estimate, data.cache_ask
        else:
            kinds = [why if why in AGENT_CAUSES else "agent" for why in data.why or ()]
            causes = [*pending, *(Cause(kind=k, seq=event.seq) for k in kinds)]  # type: ignore[arg-type]
            trim, estimate, cache_ask = False, None, None
        row = RequestRow(
            seq=event.seq,
            ctx=ctx,
            model=data.model,
            turn=self._turn,
            trim=trim,
            estimate=estimate,
            predecessor=previous,
            causes=tuple(causes),
            cache_ask=cache_ask,
            t=event.t,
            observed=isinstance(data, LlmSeen),
        )
        if previous is not None:
            self._records.pop(previous, None)
        if isinstance(data, LlmReq):
            self._records[event.seq] = data
        self._last_req[ctx] = event.seq
        self._pending[ctx] = []
        self._row_index[event.seq] = len(self._rows)
        self._rows.append(row)
        for acc in (self._all, self._by_turn[row.turn], self._by_model[row.model]):
            acc.update(_ONE_REQUEST)

    def _reply(self, event: Event, data: LlmResp) -> None:
        index = self._row_index.get(data.req)
        if index is None:
            self._problems.append(f"seq {event.seq}: llm.resp answers seq {data.req!r}, which is no llm.req")
            return
        row = self._rows[index]
        usage = data.response.usage
        prices = self._prices.get(row.model)
        cost = reply_cost(usage, prices) if prices is not None else None
        drop = self._drop(row, usage)
        row = replace(
            row,
            resp=event.seq,
            resp_t=event.t,
            usage=usage,
            cost=cost,
            drop=drop,
            provider=data.response.cache_report,
        )
        self._rows[index] = row
        add = reply_sums(usage, cost)
        for acc in (self._all, self._by_turn[row.turn], self._by_model[row.model]):
            acc.update(add)
        self._last_reply = event.seq
        self._last_rate = row.rate

    def _drop(self, row: RequestRow, usage: Usage) -> bool:
        if row.causes or row.predecessor is None or usage.cached_tokens is None:
            return False
        prev = self._rows[self._row_index[row.predecessor]].usage
        if prev is None or prev.prompt_tokens is None:
            return False
        return usage.cached_tokens < prev.prompt_tokens - tolerance(prev.prompt_tokens)

    # -- reading ---------------------------------------------------------------------------

    def totals(self) -> Totals:
        if self._snapshot is None:
            self._snapshot = Totals(
                all=Sums(**self._all),
                last_rate=self._last_rate,
                last_reply=self._last_reply,
                by_turn=tuple((t, Sums(**a)) for t, a in sorted(self._by_turn.items())),
                by_model=tuple((m, Sums(**a)) for m, a in sorted(self._by_model.items())),
                turns=self._turn,
                last_seq=self.last_seq,
                fed=self.fed,
                problems=tuple(self._problems),
                prices_from=self._prices_from,
                sandbox=self._sandbox,
                shell_runs=tuple(sorted(self._shell_runs.items())),
            )
        return self._snapshot

    @property
    def rows(self) -> tuple[RequestRow, ...]:
        return tuple(self._rows)

    def rows_updated_after(self, seq: int) -> list[RequestRow]:
        """Rows whose request or reply has a seq above ``seq`` (for incremental readers)."""
        return [row for row in self._rows if row.updated > seq]

    def row(self, seq: int) -> RequestRow | None:
        index = self._row_index.get(seq)
        return None if index is None else self._rows[index]
