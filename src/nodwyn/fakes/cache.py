"""Prompt-cache models of the fake servers.

Tokens. A fake counts a prompt as its *units* (one per tool, the system prompt, one per message or
per content block) serialised as compact JSON with sorted keys and concatenated; a prompt is a token
per 3 bytes of that, rounded up, and a cached prefix is a token per 3 whole bytes it shares
(rounded down). Appending a message extends the serialisation, so an append-only conversation's
previous prompt is a byte prefix of the next one, as it is a token prefix for a real server.

Models:

* ``single``: one slot holding the last prompt, reused up to the longest common prefix
  (llama.cpp / Ollama). A change of model or ``num_ctx`` reloads the model and empties the slot.
* ``blocks``: OpenAI. Every prompt of 1,024 tokens or more is cached; a hit is the longest prefix
  shared with any cached prompt, in whole 128-token blocks, and only from 1,024 tokens.
* ``breakpoints``: Anthropic. Nothing is cached unless the request carries ``cache_control``
  (top level, which marks the last unit, or on units). A breakpoint at or past the minimum
  (1,024 tokens) writes the prefix up to it; a read is the longest prefix, ending at a unit
  boundary not past the last breakpoint, written before. ``input_tokens`` is what follows the
  last breakpoint, so input + read + write is the whole prompt.
* ``replicas``: N replicas (16 by default) each with its own ``blocks`` cache, whose entries are
  evicted after 4 more requests to the server (a logical clock for a busy server's minutes). A
  request names its replica by its session key (a hash of it), or lands on one at random (a
  seeded RNG) when it names none: then it seldom finds its predecessor.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import orjson

CacheKind = Literal["single", "blocks", "breakpoints", "replicas"]
BLOCK = 128
MIN_CACHED = 1024
REPLICAS = 16
REPLICA_TTL = 4


def unit(value: object) -> bytes:
    """The serialisation of one prompt unit (compact JSON, sorted keys, a newline)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS) + b"\n"


def tokens(n_bytes: int) -> int:
    return -(-n_bytes // 3)


def prefix_tokens(n_bytes: int) -> int:
    return n_bytes // 3


def common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix of two byte strings (binary search over slices)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass(frozen=True, slots=True, kw_only=True)
class Prompt:
    """A request's prompt as units, with the unit counts after which a breakpoint lies."""

    units: tuple[bytes, ...]
    breakpoints: tuple[int, ...] = ()  # e.g. (3,) = after the third unit
    key: str | None = None  # the session key the request named, if any
    model: str = ""
    reload_token: str = ""  # single slot: a change (num_ctx, model) reloads the model

    @property
    def data(self) -> bytes:
        return b"".join(self.units)


@dataclass(frozen=True, slots=True, kw_only=True)
class Lookup:
    prompt_tokens: int
    cached_tokens: int
    cache_write_tokens: int = 0
    replica: int | None = None
    reloaded: bool = False

    @property
    def uncached_tokens(self) -> int:
        return self.prompt_tokens - self.cached_tokens - self.cache_write_tokens


class CacheModel(Protocol):
    def lookup(self, prompt: Prompt) -> Lookup: ...


class SingleSlot:
    def __init__(self) -> None:
        self.slot = b""
        self.loaded: str | None = None

    def lookup(self, prompt: Prompt) -> Lookup:
        data = prompt.data
        reloaded = self.loaded is not None and self.loaded != prompt.reload_token
        if self.loaded != prompt.reload_token:
            self.slot = b""
            self.loaded = prompt.reload_token
        cached = min(prefix_tokens(common_prefix(self.slot, data)), tokens(len(data)))
        self.slot = data
        return Lookup(prompt_tokens=tokens(len(data)), cached_tokens=cached, reloaded=reloaded)

    def unload(self) -> None:
        """The model leaves memory: the next request loads it again, with an empty slot."""
        self.slot = b""
        self.loaded = "\x00unloaded"


class Blocks:
    """OpenAI's cache. With ``ttl``, an entry is evicted once ``ttl`` more requests reached the
    server (a logical clock standing in for minutes on a busy server; ``now`` is that count)."""

    def __init__(self, *, limit: int = 256, ttl: int | None = None) -> None:
        self.stored: list[tuple[bytes, int]] = []
        self.limit = limit
        self.ttl = ttl

    def lookup(self, prompt: Prompt, now: int = 0) -> Lookup:
        data = prompt.data
        total = tokens(len(data))
        if self.ttl is not None:
            self.stored = [(s, t) for s, t in self.stored if now - t <= self.ttl]
        best = max((common_prefix(s, data) for s, _ in self.stored), default=0)
        hit = prefix_tokens(best) // BLOCK * BLOCK
        cached = hit if hit >= MIN_CACHED else 0
        if total >= MIN_CACHED:
            self.stored.append((data, now))
            del self.stored[: -self.limit]
        return Lookup(prompt_tokens=total, cached_tokens=cached)


class Breakpoints:
    def __init__(self) -> None:
        self.written: set[bytes] = set()  # SHA-256 of every prefix written at a breakpoint

    def lookup(self, prompt: Prompt) -> Lookup:
        data = prompt.data
        total = tokens(len(data))
        if not prompt.breakpoints:
            return Lookup(prompt_tokens=total, cached_tokens=0)
        offsets = [0]
        for u in prompt.units:
            offsets.append(offsets[-1] + len(u))
        last_bp = max(prompt.breakpoints)
        digests: list[bytes] = []
        h = hashlib.sha256()
        for u in prompt.units[:last_bp]:
            h.update(u)
            digests.append(h.copy().digest())
        read_units = 0
        for n in range(last_bp, 0, -1):
            if digests[n - 1] in self.written:
                read_units = n
                break
        read = prefix_tokens(offsets[read_units])
        upto = prefix_tokens(offsets[last_bp])
        if upto < MIN_CACHED:  # below the minimum cacheable length the ask is a silent no-op
            return Lookup(prompt_tokens=total, cached_tokens=0)
        for bp in prompt.breakpoints:
            if prefix_tokens(offsets[bp]) >= MIN_CACHED:
                self.written.add(digests[bp - 1])
        return Lookup(prompt_tokens=total, cached_tokens=read, cache_write_tokens=upto - read)


class Replicas:
    """N replicas, each a ``blocks`` cache whose entries live for ``ttl`` of the server's requests."""

    def __init__(self, n: int, *, seed: int = 0, ttl: int = REPLICA_TTL) -> None:
        if n < 1:
            raise ValueError("replicas must be at least 1")
        self.replicas = [Blocks(ttl=ttl) for _ in range(n)]
        self.rng = random.Random(seed)
        self.now = 0

    def lookup(self, prompt: Prompt) -> Lookup:
        if prompt.key:
            index = int.from_bytes(hashlib.sha256(prompt.key.encode()).digest()[:8], "big") % len(
                self.replicas
            )
        else:
            index = self.rng.randrange(len(self.replicas))
        self.now += 1
        found = self.replicas[index].lookup(prompt, self.now)
        return Lookup(prompt_tokens=found.prompt_tokens, cached_tokens=found.cached_tokens, replica=index)


def make_cache(kind: CacheKind, *, replicas: int = REPLICAS, seed: int = 0) -> CacheModel:
    if kind == "single":
        return SingleSlot()
    if kind == "blocks":
        return Blocks()
    if kind == "breakpoints":
        return Breakpoints()
    if kind == "replicas":
        return Replicas(replicas, seed=seed)
    raise ValueError(f"unknown cache model {kind!r}; use single, blocks, breakpoints or replicas")


def units_of(values: Sequence[object]) -> tuple[bytes, ...]:
    return tuple(unit(v) for v in values)
