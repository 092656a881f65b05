"""A session's cache figures as ``nodwyn run`` ends with them: the cached share of prompt tokens
and the prefill time, from the log's replies."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nodwyn.values.events import Event


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestFigure:
    seq: int  # of the llm.resp
    prompt: int | None
    cached: int | None
    prefill_ms: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheFigures:
    rows: tuple[RequestFigure, ...]

    @property
    def prompt_tokens(self) -> int:
        return sum(r.prompt or 0 for r in self.rows if r.cached is not None)

    @property
    def cached_tokens(self) -> int:
        return sum(r.cached or 0 for r in self.rows if r.prompt)

    @property
    def cached_share(self) -> float | None:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else None

    @property
    def prefill_ms(self) -> float | None:
        times = [r.prefill_ms for r in self.rows if r.prefill_ms is not None]
        return sum(times) if times else None


def cache_figures(events: Iterable[Event]) -> CacheFigures:
    rows = []
    for e in events:
        if e.kind != "llm.resp":
            continue
        resp = e.data.get("response", {})
        usage = resp.get("usage", {})
        timings = resp.get("timings", {})
        rows.append(
            RequestFigure(
                seq=e.seq,
                prompt=usage.get("prompt_tokens"),
                cached=usage.get("cached_tokens"),
                prefill_ms=timings.get("prefill_ms"),
            )
        )
    return CacheFigures(rows=tuple(rows))


def describe(f: CacheFigures) -> str:
    n = len(f.rows)
    parts = [f"{n} request" if n == 1 else f"{n} requests"]
    share = f.cached_share
    if share is None:
        parts.append("cache: not reported")
    else:
        parts.append(f"cached {share:.0%} of prompt tokens ({f.cached_tokens:,} of {f.prompt_tokens:,})")
    if f.prefill_ms is not None:
        parts.append(f"prefill {f.prefill_ms:,.0f} ms")
    return ", ".join(parts)
