"""A session's cache figures as ``nodwyn run`` ends with them: the cached share of prompt tokens
(the token cache rate, as ``nodwyn stats`` computes it: ``stats.totals``), the prefill
time the replies reported, and the cost at the prices the session's recipe recorded (the
``prices`` given serve logs whose recipes record none). ``after`` limits the figures to the replies
recorded after that seq: one turn's figures."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nodwyn.stats.totals import Aggregator, Sums, cache_rate, percent, reply_sums
from nodwyn.values.events import (
    LLM_RESP,
    MAIN_CTX,
    MODEL_SWITCH,
    SESSION_RESUME,
    SESSION_START,
    USER_MSG,
    Event,
    LlmResp,
    ModelSwitch,
    SessionResume,
    SessionStart,
    UserMsg,
    decoded,
)
from nodwyn.values.model import Prices


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheFigures:
    requests: int  # replies recorded
    prompt_tokens: int  # over the replies that report a cache read
    cached_tokens: int
    prefill_ms: float | None  # summed over the replies that report it
    output_tokens: int = 0
    cost_usd: float = 0.0  # over the replies with a known cost
    cost_unknown: int = 0  # replies without a price (or without a count the price needs)

    @property
    def cached_share(self) -> float | None:
        return cache_rate(self.cached_tokens, self.prompt_tokens)

    @property
    def cost(self) -> float | None:
        """The cost in US dollars; None when no reply has a price (unknown, not $0)."""
        if self.requests and self.cost_unknown == self.requests:
            return None
        return self.cost_usd


def cache_figures(
    events: Iterable[Event], prices: Mapping[str, Prices] | None = None, *, after: int = 0
) -> CacheFigures:
    agg = Aggregator(prices)
    times: list[float] = []
    for e in events:
        agg.feed(e)
        reply = decoded(e, LLM_RESP) if e.seq > after else None
        if isinstance(reply, LlmResp) and reply.response.timings.prefill_ms is not None:
            times.append(reply.response.timings.prefill_ms)
    acc: Counter[str] = Counter()  # the totals' own sums, over the replies after ``after``
    for row in agg.rows:
        if row.resp is not None and row.resp > after and row.usage is not None:
            acc.update(reply_sums(row.usage, row.cost))
    s = Sums(**acc)
    return CacheFigures(
        requests=s.replies,
        prompt_tokens=s.rate_prompt,
        cached_tokens=s.rate_cached,
        prefill_ms=sum(times) if times else None,
        output_tokens=s.output_tokens,
        cost_usd=s.cost_usd,
        cost_unknown=s.cost_unknown,
    )


def cost_text(f: CacheFigures) -> str:
    """``$0.0123``; ``unknown`` when no reply has a price; a lower bound when some lack one."""
    cost = f.cost
    if cost is None:
        return "unknown"
    if f.cost_unknown:
        return f"at least ${cost:.4f} ({f.cost_unknown} of {f.requests} replies unpriced)"
    return f"${cost:.4f}"


def describe(f: CacheFigures) -> str:
    parts = [f"{f.requests} request" if f.requests == 1 else f"{f.requests} requests"]
    share = f.cached_share
    if share is None:
        parts.append("cache: not reported")
    else:
        parts.append(f"cached {percent(share)} of prompt tokens ({f.cached_tokens:,} of {f.prompt_tokens:,})")
    if f.prefill_ms is not None:
        parts.append(f"prefill {f.prefill_ms:,.0f} ms")
    if f.requests:
        parts.append(f"cost {cost_text(f)}")
    return ", ".join(parts)


def figures_json(f: CacheFigures) -> dict[str, Any]:
    """The figures as ``--json`` prints them."""
    return {
        "requests": f.requests,
        "tokens": {"prompt": f.prompt_tokens, "cached": f.cached_tokens, "output": f.output_tokens},
        "cache_share": f.cached_share,
        "prefill_ms": f.prefill_ms,
        "cost_usd": f.cost,
        "cost_complete": f.cost_unknown == 0,
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class Overview:
    """A session as ``nodwyn sessions`` lists it: its first message, the model it last ran on, its
    figures and cost, and whether a search matched its messages or replies."""

    first_message: str | None
    model: str | None
    figures: CacheFigures
    matched: bool


def imported_title(start: SessionStart) -> str | None:
    """The title an imported session's source gives it (its first typed prompt; ADR 0431)."""
    record = start.extra.get("imported")
    title = record.get("title") if isinstance(record, dict) else None
    return title if isinstance(title, str) and title else None


def overview(
    events: Iterable[Event],
    prices: Mapping[str, Prices] | None = None,
    *,
    query: str | None = None,
    clean: Callable[[str], str] | None = None,
) -> Overview:
    """One pass over a session's events; ``query`` is searched (ignoring case) in the person's
    messages and the replies' text, as ``clean`` gives them (a redaction) when it is given."""
    needle = query.casefold() if query else None
    seen = clean or (lambda text: text)
    first: str | None = None
    model: str | None = None
    matched = needle is None

    def watch(events: Iterable[Event]) -> Iterable[Event]:
        nonlocal first, model, matched
        for e in events:
            p = decoded(e, USER_MSG, SESSION_START, SESSION_RESUME, MODEL_SWITCH, LLM_RESP)
            if isinstance(p, UserMsg) and e.ctx == MAIN_CTX:
                if first is None:
                    first = p.text
                if needle is not None and not matched and needle in seen(p.text).casefold():
                    matched = True
            elif isinstance(p, SessionStart | SessionResume | ModelSwitch):
                model = p.model
                title = imported_title(p) if first is None and isinstance(p, SessionStart) else None
                first = title or first
            elif isinstance(p, LlmResp) and needle is not None and not matched:
                matched = needle in seen(p.response.text).casefold()
            yield e

    figures = cache_figures(watch(events), prices)
    return Overview(first_message=first, model=model, figures=figures, matched=matched)
