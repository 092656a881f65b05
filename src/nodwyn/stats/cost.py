"""The price of one reply, from the model entry's prices (US dollars per million tokens).

``prompt_tokens`` is the whole prompt (for Anthropic: input + cache read + cache write, as the
dialect normalises it). The uncached input is what remains after the cache reads and writes; reads
are priced at ``cached_input`` and writes at ``cache_write``, each defaulting to the input price, as
the entry's provider prices them. ``output_tokens`` already counts reasoning tokens (every provider
we speak bills thinking as output), so reasoning is not priced twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodwyn.values.model import Prices
from nodwyn.values.request import Usage

_PER_TOKEN = 1e-6


@dataclass(frozen=True, slots=True, kw_only=True)
class Cost:
    """A reply's cost. ``complete`` is False when a count it needs was not reported."""

    usd: float
    complete: bool


def reply_cost(usage: Usage, prices: Prices) -> Cost:
    """What a reply cost at ``prices``; unknown counts add nothing and mark the cost incomplete."""
    usd = 0.0
    complete = True
    if usage.prompt_tokens is None:
        complete = False
    else:
        read = usage.cached_tokens or 0
        write = usage.cache_write_tokens or 0
        fresh = max(usage.prompt_tokens - read - write, 0)
        read_price = prices.input if prices.cached_input is None else prices.cached_input
        write_price = prices.input if prices.cache_write is None else prices.cache_write
        usd += fresh * prices.input + read * read_price + write * write_price
    if usage.output_tokens is None:
        complete = False
    else:
        usd += usage.output_tokens * prices.output
    return Cost(usd=usd * _PER_TOKEN, complete=complete)
