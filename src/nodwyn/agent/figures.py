"""A session's cache figures as ``nodwyn run`` ends with them: the cached share of prompt tokens
(the seed's token cache rate, as ``nodwyn stats`` computes it: ``stats.totals``) and the prefill
time the replies reported."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nodwyn.stats.totals import Aggregator, cache_rate, percent
from nodwyn.values.events import Event


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheFigures:
    requests: int  # replies recorded
    prompt_tokens: int  # over the replies that report a cache read
    cached_tokens: int
    prefill_ms: float | None  # summed over the replies that report it

    @property
    def cached_share(self) -> float | None:
        return cache_rate(self.cached_tokens, self.prompt_tokens)


def cache_figures(events: Iterable[Event]) -> CacheFigures:
    agg = Aggregator()
    times: list[float] = []
    for e in events:
        agg.feed(e)
        if e.kind == "llm.resp":
            ms = e.data.get("response", {}).get("timings", {}).get("prefill_ms")
            if ms is not None:
                times.append(ms)
    sums = agg.totals().all
    return CacheFigures(
        requests=sums.replies,
        prompt_tokens=sums.rate_prompt,
        cached_tokens=sums.rate_cached,
        prefill_ms=sum(times) if times else None,
    )


def describe(f: CacheFigures) -> str:
    parts = [f"{f.requests} request" if f.requests == 1 else f"{f.requests} requests"]
    share = f.cached_share
    if share is None:
        parts.append("cache: not reported")
    else:
        parts.append(f"cached {percent(share)} of prompt tokens ({f.cached_tokens:,} of {f.prompt_tokens:,})")
    if f.prefill_ms is not None:
        parts.append(f"prefill {f.prefill_ms:,.0f} ms")
    return ", ".join(parts)
