"""What a sequence of requests costs a single-slot prefix cache, measured on canonical bytes.

A request is measured as the canonical bytes of its parts in prefix order: the system prompt,
each tool schema, each message (``values.canonical.canonical_bytes`` of their ``values.codec``
JSON). The canonical request itself (``request_to_json``) sorts its keys, which puts the messages
before the system prompt and the tools; a provider's prompt puts them first, so the prefix is
measured over the parts in that order (ADR 0032). Sizes for the budget are the canonical request's
own: ``request_size`` equals ``len(canonical_bytes(request_to_json(request)))``, computed from the
parts. A token is three bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nodwyn.values.canonical import canonical_bytes
from nodwyn.values.codec import message_to_json, tool_to_json
from nodwyn.values.content import AssistantMessage, Message, TextPart, ToolMessage, UserMessage
from nodwyn.values.request import Request, ToolSpec

BYTES_PER_TOKEN = 3
FULL_PREFILL = 0.5  # a request that shares under half of the previous request is a full prefill


class Parts:
    """Canonical bytes of messages and tools, computed once per distinct value."""

    def __init__(self) -> None:
        self._messages: dict[Message, bytes] = {}
        self._tools: dict[tuple[str, str, bytes], bytes] = {}
        self._texts: dict[str, bytes] = {}

    def message(self, m: Message) -> bytes:
        b = self._messages.get(m)
        if b is None:
            b = self._messages[m] = canonical_bytes(message_to_json(m))
        return b

    def text(self, s: str) -> bytes:
        b = self._texts.get(s)
        if b is None:
            b = self._texts[s] = canonical_bytes(s)
        return b

    def tools(self, tools: Sequence[ToolSpec]) -> list[bytes]:
        out = []
        for t in tools:
            b = canonical_bytes(tool_to_json(t))
            out.append(self._tools.setdefault((t.name, t.description, b), b))
        return out

    def request(self, r: Request) -> list[bytes]:
        """The parts in prefix order: system, tools, messages."""
        return [self.text(r.system), *self.tools(r.tools), *(self.message(m) for m in r.messages)]


def request_size(
    system: bytes, tools: Sequence[bytes], messages: Sequence[bytes], max_output: int | None
) -> int:
    """``len(canonical_bytes(request_to_json(r)))`` from its parts' canonical bytes."""
    head = len(b'{"max_output":') + len(canonical_bytes(max_output)) + len(b',"messages":[')
    msgs = sum(len(m) for m in messages) + max(len(messages) - 1, 0)
    mid = len(b'],"system":') + len(system) + len(b',"tools":[')
    tls = sum(len(t) for t in tools) + max(len(tools) - 1, 0)
    return head + msgs + mid + tls + len(b"]}")


def request_bytes(
    system: bytes, tools: Sequence[bytes], messages: Sequence[bytes], max_output: int | None
) -> bytes:
    """``canonical_bytes(request_to_json(r))`` assembled from its parts' canonical bytes."""
    return b"".join(
        (
            b'{"max_output":',
            canonical_bytes(max_output),
            b',"messages":[',
            b",".join(messages),
            b'],"system":',
            system,
            b',"tools":[',
            b",".join(tools),
            b"]}",
        )
    )


def common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix of two byte strings (binary search on slices)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while lo < hi:  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def shared_prefix(prev: Sequence[bytes], cur: Sequence[bytes]) -> int:
    """Bytes of ``cur``'s parts, joined, that ``prev``'s parts, joined, begin with.

    Each part is a whole canonical JSON value, so no part is a proper prefix of another part that
    differs from it: the common prefix ends inside the first pair of parts that differ."""
    n = 0
    for a, b in zip(prev, cur, strict=False):
        if a is b or a == b:
            n += len(a)
            continue
        return n + common_prefix(a, b)
    return n


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


@dataclass(frozen=True, slots=True, kw_only=True)
class Figures:
    """The benchmark's figures for one policy at one budget over a set of runs."""

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


def figures(runs: Sequence[tuple[Sequence[Measured], int]], budget: int) -> Figures:
    """``runs``: each run's requests, in order, and its append-only minimum (bytes)."""
    stream = cached = minimum = fulls = over = n = 0
    occupancy = visible = capped = 0.0
    refill = 0
    for reqs, run_minimum in runs:
        minimum += run_minimum
        previous = None
        for r in reqs:
            n += 1
            stream += r.stream
            cached += r.cached
            fulls += previous is not None and r.cached < FULL_PREFILL * previous
            previous = r.stream
            over += tokens(r.size) > budget
            occupancy += r.size / BYTES_PER_TOKEN / budget
            visible += r.visible / r.conversation if r.conversation else 1.0
            capped += r.shortened / r.conversation if r.conversation else 0.0
            refill += (r.stream - r.cached) if r.broken else 0
    return Figures(
        runs=len(runs),
        requests=n,
        cached_share=cached / stream if stream else 1.0,
        uncached_ratio=(stream - cached) / minimum if minimum else 1.0,
        full_prefills=fulls,
        over_budget=over,
        occupancy=occupancy / n if n else 0.0,
        visible=visible / n if n else 1.0,
        uncached_tokens=(stream - cached) // BYTES_PER_TOKEN,
        minimum_tokens=minimum // BYTES_PER_TOKEN,
        refill_share=refill / (stream - cached) if stream > cached else 0.0,
        hidden_by_caps=capped / n if n else 0.0,
    )


def tokens(size: int) -> int:
    """Tokens of a request of ``size`` bytes: a token per three bytes, rounded up."""
    return -(-size // BYTES_PER_TOKEN)
