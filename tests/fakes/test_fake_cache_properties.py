"""Properties of the cache models, over random append-only and edited conversations."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nodwyn.fakes import FakeServer
from nodwyn.fakes.cache import BLOCK, MIN_CACHED, Blocks, Breakpoints, Prompt, Replicas, SingleSlot, units_of

from .fake_wire import SYSTEM, ndjson, post

texts = st.text(alphabet="abcdefgh ", min_size=0, max_size=600)
conversations = st.lists(texts, min_size=1, max_size=8)


def _prompts(system: str, turns: list[str]) -> list[Prompt]:
    out, units = [], [{"role": "system", "content": system}]
    for t in turns:
        units.append({"role": "user", "content": t})
        out.append(Prompt(units=units_of(units)))
    return out


@given(conversations, st.integers(min_value=0, max_value=3000))
@settings(max_examples=60, deadline=None)
def test_blocks_hits_are_whole_blocks_from_the_minimum_and_never_exceed_the_prompt(
    turns: list[str], pad: int
) -> None:
    cache = Blocks()
    for p in _prompts(SYSTEM[:pad] + "x", turns):
        found = cache.lookup(p)
        assert found.cached_tokens <= found.prompt_tokens
        assert found.cached_tokens == 0 or (
            found.cached_tokens % BLOCK == 0 and found.cached_tokens >= MIN_CACHED
        )


@given(conversations)
@settings(max_examples=60, deadline=None)
def test_single_slot_reads_the_whole_predecessor_of_an_append_only_prompt(turns: list[str]) -> None:
    cache = SingleSlot()
    previous = None
    for p in _prompts(SYSTEM, turns):
        found = cache.lookup(p)
        if previous is not None:
            assert found.cached_tokens == len(previous.data) // 3
        previous = p


@given(conversations, st.booleans())
@settings(max_examples=60, deadline=None)
def test_breakpoints_split_the_prompt_exactly(turns: list[str], asked: bool) -> None:
    cache = Breakpoints()
    for p in _prompts(SYSTEM, turns):
        marked = Prompt(units=p.units, breakpoints=(len(p.units),) if asked else ())
        found = cache.lookup(marked)
        assert found.uncached_tokens >= 0
        assert found.cached_tokens + found.cache_write_tokens + found.uncached_tokens == found.prompt_tokens
        if not asked:
            assert found.cached_tokens == found.cache_write_tokens == 0


@given(st.integers(min_value=1, max_value=32), st.text(min_size=1, max_size=20), st.integers(0, 100))
@settings(max_examples=40, deadline=None)
def test_a_session_key_always_lands_on_the_same_replica(n: int, key: str, seed: int) -> None:
    cache = Replicas(n, seed=seed)
    chosen = {cache.lookup(Prompt(units=units_of([{"t": i}]), key=key)).replica for i in range(5)}
    assert len(chosen) == 1


def test_keep_alive_zero_unloads_the_model_and_its_cache() -> None:
    with FakeServer(api="ollama", script=[{"text": "a"}, {"text": "b"}, {"text": "c"}]) as fake:
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hi"}]
        finals = []
        for keep in ("5m", 0, "5m"):
            r = post(
                fake.url + "/api/chat", {"model": "fake-model", "messages": messages, "keep_alive": keep}
            )
            finals.append(ndjson(r.text)[-1])
    assert (
        "load_duration" not in finals[1]
        and finals[1]["prompt_eval_duration"] < finals[0]["prompt_eval_duration"]
    )
    assert (
        finals[2]["load_duration"] > 0
        and finals[2]["prompt_eval_duration"] == finals[0]["prompt_eval_duration"]
    )
