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

Expiry by time (``Expiry``, off by default): providers drop a cache entry that nothing used for a
while (Anthropic: 5 minutes, or an hour asked for; OpenAI: 5-10 minutes; Ollama unloads a model
after its keep-alive). With ``expiry``, each model forgets what was not used for ``seconds`` of
wall-clock time: a ``blocks`` entry (a hit refreshes the entry it read), a ``breakpoints`` prefix
(a read refreshes the prefix it read), a replica's entries, and the ``single`` slot (the model is
unloaded, as Ollama's keep-alive does).
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from itertools import accumulate
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Expiry:
    """An entry not used for ``seconds`` (by ``clock``, in seconds) is evicted."""

    seconds: float
    clock: Callable[[], float] = field(default=time.monotonic)

    def __post_init__(self) -> None:
        if not self.seconds > 0:
            raise ValueError(f"cache expiry must be a positive number of seconds, not {self.seconds!r}")

    def alive(self, used: float, now: float) -> bool:
        return now - used <= self.seconds


class CacheModel(Protocol):
    def lookup(self, prompt: Prompt) -> Lookup: ...


class SingleSlot:
    def __init__(self, *, expiry: Expiry | None = None) -> None:
        self.slot = b""
        self.loaded: str | None = None
        self.expiry = expiry
        self.used = 0.0

    def lookup(self, prompt: Prompt) -> Lookup:
        data = prompt.data
        if self.expiry is not None:
            now = self.expiry.clock()
            if self.loaded is not None and not self.expiry.alive(self.used, now):
                self.unload()  # the keep-alive ran out
            self.used = now
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
    server (a logical clock standing in for minutes on a busy server; ``now`` is that count). With
    ``expiry``, an entry neither written nor read for ``expiry.seconds`` is evicted."""

    def __init__(self, *, limit: int = 256, ttl: int | None = None, expiry: Expiry | None = None) -> None:
        self.stored: list[tuple[bytes, int, float]] = []  # prompt, request count, last used (seconds)
        self.limit = limit
        self.ttl = ttl
        self.expiry = expiry

    def lookup(self, prompt: Prompt, now: int = 0) -> Lookup:
        data = prompt.data
        total = tokens(len(data))
        moment = self.expiry.clock() if self.expiry is not None else 0.0
        self._evict(now, moment)
        shared = [common_prefix(s, data) for s, _, _ in self.stored]
        best = max(shared, default=0)
        hit = prefix_tokens(best) // BLOCK * BLOCK
        cached = hit if hit >= MIN_CACHED else 0
        if cached:  # the entry read is used now
            i = shared.index(best)
            self.stored[i] = (self.stored[i][0], self.stored[i][1], moment)
        if total >= MIN_CACHED:
            self.stored.append((data, now, moment))
            del self.stored[: -self.limit]
        return Lookup(prompt_tokens=total, cached_tokens=cached)

    def _evict(self, now: int, moment: float) -> None:
        """Drop the entries past ``ttl`` requests or unused for the expiry's seconds."""
        ttl, expiry = self.ttl, self.expiry
        self.stored = [
            (s, t, used)
            for s, t, used in self.stored
            if (ttl is None or now - t <= ttl) and (expiry is None or expiry.alive(used, moment))
        ]


class Breakpoints:
    """Anthropic's cache. With ``expiry``, a prefix neither written nor read for
    ``expiry.seconds`` is evicted (a read refreshes it, as Anthropic's does)."""

    def __init__(self, *, expiry: Expiry | None = None) -> None:
        self.written: dict[bytes, float] = {}  # SHA-256 of every prefix written at a breakpoint -> last used
        self.expiry = expiry

    def lookup(self, prompt: Prompt) -> Lookup:
        data = prompt.data
        total = tokens(len(data))
        moment = self._evict()
        if not prompt.breakpoints:
            return Lookup(prompt_tokens=total, cached_tokens=0)
        offsets = [0, *accumulate(len(u) for u in prompt.units)]
        last_bp = max(prompt.breakpoints)
        digests: list[bytes] = []
        h = hashlib.sha256()
        for u in prompt.units[:last_bp]:
            h.update(u)
            digests.append(h.copy().digest())
        read_units = next((n for n in range(last_bp, 0, -1) if digests[n - 1] in self.written), 0)
        if read_units:
            self.written[digests[read_units - 1]] = moment
        read = prefix_tokens(offsets[read_units])
        upto = prefix_tokens(offsets[last_bp])
        if upto < MIN_CACHED:  # below the minimum cacheable length the ask is a silent no-op
            return Lookup(prompt_tokens=total, cached_tokens=0)
        for bp in prompt.breakpoints:
            if prefix_tokens(offsets[bp]) >= MIN_CACHED:
                self.written[digests[bp - 1]] = moment
        return Lookup(prompt_tokens=total, cached_tokens=read, cache_write_tokens=upto - read)

    def _evict(self) -> float:
        """Drop the prefixes unused for the expiry's seconds; the time now (0 without expiry)."""
        if self.expiry is None:
            return 0.0
        now, expiry = self.expiry.clock(), self.expiry
        self.written = {d: used for d, used in self.written.items() if expiry.alive(used, now)}
        return now


class Replicas:
    """N replicas, each a ``blocks`` cache whose entries live for ``ttl`` of the server's requests."""

    def __init__(
        self, n: int, *, seed: int = 0, ttl: int = REPLICA_TTL, expiry: Expiry | None = None
    ) -> None:
        if n < 1:
            raise ValueError("replicas must be at least 1")
        self.replicas = [Blocks(ttl=ttl, expiry=expiry) for _ in range(n)]
        self.rng = random.Random(seed)
        self.now = 0

    def lookup(self, prompt: Prompt) -> Lookup:
        n = len(self.replicas)
        if prompt.key:
            index = int.from_bytes(hashlib.sha256(prompt.key.encode()).digest()[:8], "big") % n
        else:
            index = self.rng.randrange(n)
        self.now += 1
        return replace(self.replicas[index].lookup(prompt, self.now), replica=index)


def make_cache(
    kind: CacheKind, *, replicas: int = REPLICAS, seed: int = 0, expiry: Expiry | None = None
) -> CacheModel:
    if kind == "single":
        return SingleSlot(expiry=expiry)
    if kind == "blocks":
        return Blocks(expiry=expiry)
    if kind == "breakpoints":
        return Breakpoints(expiry=expiry)
    if kind == "replicas":
        return Replicas(replicas, seed=seed, expiry=expiry)
    raise ValueError(f"unknown cache model {kind!r}; use single, blocks, breakpoints or replicas")


def units_of(values: Sequence[object]) -> tuple[bytes, ...]:
    return tuple(unit(v) for v in values)
