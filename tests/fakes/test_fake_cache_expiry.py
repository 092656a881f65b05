"""The fake caches' expiry by time (``cache_ttl_seconds``): an entry unused for that long is gone,
one used in time is kept and refreshed, per cache model; off by default."""

from __future__ import annotations

import time

import pytest

from nodwyn.fakes import FakeServer
from nodwyn.fakes.cache import MIN_CACHED, Blocks, Breakpoints, Expiry, Prompt, Replicas, SingleSlot, units_of

from .fake_wire import SYSTEM, post, sse_json


class Clock:
    """A hand-moved clock, in seconds."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _turns(n: int, breakpoints: bool = False) -> list[Prompt]:
    units: list[object] = [{"role": "system", "content": SYSTEM}]
    out = []
    for i in range(n):
        units.append({"role": "user", "content": f"step {i} " + "read the next file " * 30})
        bps = (len(units),) if breakpoints else ()
        out.append(Prompt(units=units_of(units), breakpoints=bps, key="k"))
    return out


def test_blocks_forget_an_entry_unused_past_the_expiry_and_a_hit_refreshes_it() -> None:
    clock = Clock()
    cache = Blocks(expiry=Expiry(seconds=300, clock=clock))
    a, b, c, d = _turns(4)
    assert cache.lookup(a).cached_tokens == 0
    clock.now += 299
    assert cache.lookup(b).cached_tokens >= MIN_CACHED  # in time
    clock.now += 200  # a written 499 s ago but read 200 s ago; b written 200 s ago
    assert cache.lookup(c).cached_tokens >= MIN_CACHED
    clock.now += 301
    assert cache.lookup(d).cached_tokens == 0  # everything unused for 301 s
    assert cache.lookup(d).cached_tokens >= MIN_CACHED  # d itself was written again


def test_breakpoints_forget_a_prefix_unused_past_the_expiry() -> None:
    clock = Clock()
    cache = Breakpoints(expiry=Expiry(seconds=300, clock=clock))
    a, b, c = _turns(3, breakpoints=True)
    first = cache.lookup(a)
    assert first.cached_tokens == 0 and first.cache_write_tokens > 0
    clock.now += 300
    assert cache.lookup(b).cached_tokens == first.cache_write_tokens  # read at the edge: refreshed
    clock.now += 300.5
    late = cache.lookup(c)
    assert late.cached_tokens == 0 and late.cache_write_tokens == late.prompt_tokens - late.uncached_tokens


def test_replicas_forget_by_time_as_well_as_by_requests() -> None:
    clock = Clock()
    cache = Replicas(4, expiry=Expiry(seconds=60, clock=clock))
    a, b, c = _turns(3)
    cache.lookup(a)
    assert cache.lookup(b).cached_tokens >= MIN_CACHED  # same key, same replica
    clock.now += 61
    assert cache.lookup(c).cached_tokens == 0


def test_the_single_slot_unloads_after_its_keep_alive() -> None:
    clock = Clock()
    cache = SingleSlot(expiry=Expiry(seconds=300, clock=clock))
    a, b, c = _turns(3)
    cache.lookup(a)
    clock.now += 10
    kept = cache.lookup(b)
    assert kept.cached_tokens > 0 and not kept.reloaded
    clock.now += 301
    gone = cache.lookup(c)
    assert gone.cached_tokens == 0 and gone.reloaded


def test_no_expiry_keeps_entries_however_long_and_a_bad_expiry_is_refused() -> None:
    cache = Blocks()
    a, b = _turns(2)
    cache.lookup(a)
    assert cache.lookup(b).cached_tokens >= MIN_CACHED
    with pytest.raises(ValueError, match="positive number of seconds"):
        Expiry(seconds=0)


def _chat(fake: FakeServer, turns: int, pause: float) -> list[int]:
    messages: list[dict[str, object]] = [{"role": "system", "content": SYSTEM}]
    cached = []
    for n in range(turns):
        if n:
            time.sleep(pause)
        messages.append({"role": "user", "content": f"step {n}: " + "look at the next file please " * 20})
        body = {"model": "m", "messages": messages, "stream": True, "stream_options": {"include_usage": True}}
        r = post(fake.url + "/v1/chat/completions", body)
        assert r.status_code == 200, r.text
        usage = next(c["usage"] for c in sse_json(r.text) if c.get("usage"))
        cached.append(usage["prompt_tokens_details"]["cached_tokens"])
        messages.append({"role": "assistant", "content": "ok"})
    return cached


def test_a_fake_server_with_a_ttl_misses_after_a_pause_and_hits_without_one() -> None:
    script = [{"text": "ok"}] * 4
    with FakeServer(api="openai-chat", script=script, cache_ttl_seconds=0.5) as fake:
        quick = _chat(fake, 2, 0.0)
    with FakeServer(api="openai-chat", script=script, cache_ttl_seconds=0.5) as fake:
        slow = _chat(fake, 2, 0.7)
    assert quick[1] >= MIN_CACHED
    assert slow[1] == 0
