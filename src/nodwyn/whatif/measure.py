"""What a sequence of requests costs a single-slot prefix cache, measured on canonical bytes.

A request is measured as the canonical bytes of its parts in prefix order: the system prompt,
each tool schema, each message, as ``nodwyn.stats.prefix`` encodes them (``Encoder``) and compares
them (``common_parts``). The canonical request itself (``request_to_json``) sorts its keys, which
puts the messages before the system prompt and the tools; a provider's prompt puts them first, so
the prefix is measured over the parts in that order (ADR 0032). Sizes for the budget are the
canonical request's own: ``request_size`` equals ``len(canonical_bytes(request_to_json(request)))``,
computed from the parts. A token is three bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nodwyn.values.content import AssistantMessage, Message, TextPart, ToolMessage, UserMessage
from nodwyn.values.model import Prices
from nodwyn.window import max_output_bytes, overhead

BYTES_PER_TOKEN = 3
FULL_PREFILL = 0.5  # a request that shares under half of the previous request is a full prefill
RECENT = (8192, 16384)  # recent-8Ki and recent-16Ki: the last tokens of conversation measured


def request_size(
    system: bytes, tools: Sequence[bytes], messages: Sequence[bytes], max_output: int | None
) -> int:
    """``len(canonical_bytes(request_to_json(r)))`` from its parts' canonical bytes, as the window
    counts it (``window.encode``)."""
    catalog = b"[" + b",".join(tools) + b"]"
    frame = overhead(system, catalog, max_output_bytes(max_output))
    return frame + sum(len(m) for m in messages) + max(len(messages) - 1, 0)


def content_size(m: Message) -> int:
    """UTF-8 bytes of what a message says: its text, thinking, calls' names and arguments, result."""
    if isinstance(m, UserMessage):
        return sum(len(p.text.encode()) for p in m.parts if isinstance(p, TextPart))
    if isinstance(m, AssistantMessage):
        calls = sum(len(c.name.encode()) + len(c.arguments.encode()) for c in m.calls)
        return len(m.text.encode()) + len(m.thinking.encode()) + calls
    assert isinstance(m, ToolMessage)
    return len(m.text.encode())


@dataclass(frozen=True, slots=True, kw_only=True)
class Measured:
    """One request of one run under one policy, in bytes."""

    stream: int  # bytes of its parts in prefix order
    cached: int  # of those, the prefix shared with the previous request of the run (0 for the first)
    size: int  # bytes of the canonical request (the budget's measure)
    visible: int  # content bytes of the conversation this request still shows
    conversation: int  # content bytes of the whole conversation before this reply
    shortened: int = 0  # content bytes of shown messages the request cut (result caps)
    broken: bool = False  # the request does not begin with the whole previous request
    recent: tuple[float, ...] = (1.0, 1.0)  # share of the last RECENT tokens of conversation shown
    task_kept: bool = True  # the task (the messages before the first reply) is shown whole
    side: bool = False  # a call for a summary, not for one of the run's replies (ADR 0290)
    output_tokens: int = 0  # tokens a side call writes (its summary); the run's replies are the same for all


@dataclass(frozen=True, slots=True, kw_only=True)
class Figures:
    """The figures for one policy at one budget over a set of runs. Side calls (a summariser's)
    count in the bytes, the cost and ``side_calls``; the per-request means are over the requests
    that ask for one of the runs' replies."""

    runs: int
    requests: int
    cached_share: float  # sum of cached prefixes / sum of request streams
    uncached_ratio: float  # sum of uncached bytes / the append-only minimum
    full_prefills: int  # requests sharing under half of the previous request (each run's first excluded)
    over_budget: int  # requests whose canonical size is over the budget
    occupancy: float  # mean of (canonical size / 3) / budget
    visible: float  # mean of visible / conversation
    uncached_tokens: int
    minimum_tokens: int
    refill_share: float = 0.0  # share of uncached bytes sent by requests that broke the prefix
    hidden_by_caps: float = 0.0  # mean share of the conversation hidden by shortening, not elision
    recent8: float = 1.0  # mean share of the last 8,192 tokens of conversation shown
    recent16: float = 1.0  # mean share of the last 16,384 tokens of conversation shown
    task_kept: float = 1.0  # share of requests that show the task whole
    side_calls: int = 0  # summariser calls the policy adds to the run's requests
    cached_tokens: int = 0
    output_tokens: int = 0  # what the side calls write
    usd: float | None = None  # the prompts' cost at the prices given (None: no prices)


def figures(
    runs: Sequence[tuple[Sequence[Measured], int]], budget: int, prices: Prices | None = None
) -> Figures:
    """``runs``: each run's requests, in order, and its append-only minimum (bytes)."""
    stream = cached = minimum = fulls = over = n = sides = out_tokens = 0
    occupancy = visible = capped = 0.0
    recent = [0.0] * len(RECENT)
    refill = kept = 0
    for reqs, run_minimum in runs:
        minimum += run_minimum
        previous = None
        for r in reqs:
            stream += r.stream
            cached += r.cached
            refill += (r.stream - r.cached) if r.broken else 0
            if r.side:
                sides += 1
                out_tokens += r.output_tokens
                continue
            n += 1
            fulls += previous is not None and r.cached < FULL_PREFILL * previous
            previous = r.stream
            over += tokens(r.size) > budget
            occupancy += r.size / BYTES_PER_TOKEN / budget
            visible += r.visible / r.conversation if r.conversation else 1.0
            capped += r.shortened / r.conversation if r.conversation else 0.0
            for k, share in enumerate(r.recent):
                recent[k] += share
            kept += r.task_kept
    uncached_tokens = (stream - cached) // BYTES_PER_TOKEN
    cached_tokens = cached // BYTES_PER_TOKEN
    return Figures(
        runs=len(runs),
        requests=n,
        cached_share=cached / stream if stream else 1.0,
        uncached_ratio=(stream - cached) / minimum if minimum else 1.0,
        full_prefills=fulls,
        over_budget=over,
        occupancy=occupancy / n if n else 0.0,
        visible=visible / n if n else 1.0,
        uncached_tokens=uncached_tokens,
        minimum_tokens=minimum // BYTES_PER_TOKEN,
        refill_share=refill / (stream - cached) if stream > cached else 0.0,
        hidden_by_caps=capped / n if n else 0.0,
        recent8=recent[0] / n if n else 1.0,
        recent16=recent[1] / n if n else 1.0,
        task_kept=kept / n if n else 1.0,
        side_calls=sides,
        cached_tokens=cached_tokens,
        output_tokens=out_tokens,
        usd=None if prices is None else prompt_cost(uncached_tokens, cached_tokens, out_tokens, prices),
    )


def prompt_cost(uncached: int, cached: int, output: int, prices: Prices) -> float:
    """US dollars for prompts of ``uncached`` and ``cached`` tokens and ``output`` tokens of
    summaries. An uncached token is written to the cache, so it costs the cache-write price where
    the entry has one (else the input price); a cached token the cached-input price (else the input
    price). The runs' own replies cost the same under every policy and are left out (ADR 0290)."""
    write = prices.input if prices.cache_write is None else prices.cache_write
    read = prices.input if prices.cached_input is None else prices.cached_input
    return (uncached * write + cached * read + output * prices.output) * 1e-6


def recent_shares(content: Sequence[int], end: int, shown: Sequence[tuple[int, float]]) -> tuple[float, ...]:
    """For each of ``RECENT``: the share of the last that many tokens of ``messages[:end]`` the
    request shows. ``content`` holds the prefix sums of content bytes; ``shown`` is (message index,
    the share of that message shown), a capped result counting as shown in proportion."""
    total = content[end]
    out = []
    for tok in RECENT:
        start = max(0, total - tok * BYTES_PER_TOKEN)
        span = total - start
        if span <= 0:
            out.append(1.0)
            continue
        seen = 0.0
        for i, share in shown:
            overlap = content[i + 1] - max(content[i], start)
            if overlap > 0:
                seen += overlap * share
        out.append(seen / span)
    return tuple(out)


def tokens(size: int) -> int:
    """Tokens of a request of ``size`` bytes: a token per three bytes, rounded up."""
    return -(-size // BYTES_PER_TOKEN)
