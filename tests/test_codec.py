"""Codec: every value's JSON round trip is the identity, and bad shapes are named."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodwyn.errors import CorruptLogError, UnknownRecipeError
from nodwyn.values import codec
from nodwyn.values.content import AssistantMessage, Origin, ThinkingBlock, ToolCall
from nodwyn.values.recipe import KNOWN_VERSIONS, Flag, Recipe, WindowLimits, policy_for
from nodwyn.values.request import Response, Timings, ToolSpec, Usage

text = st.text(max_size=20)
maybe_int = st.none() | st.integers(min_value=0, max_value=10**9)
origins = st.builds(
    Origin, model=text, server=st.none() | text, url=st.none() | text, credential=st.none() | text
)
blocks = st.builds(
    ThinkingBlock,
    type=st.sampled_from(["thinking", "redacted_thinking", "reasoning", "reasoning_details"]),
    origin=origins,
    data=text,
    text=text,
    position=st.integers(0, 5),
)
calls = st.builds(ToolCall, id=text, name=text, arguments=text)
usages = st.builds(
    Usage,
    prompt_tokens=maybe_int,
    cached_tokens=maybe_int,
    cache_write_tokens=maybe_int,
    output_tokens=maybe_int,
    reasoning_tokens=maybe_int,
)
responses = st.builds(
    Response,
    text=text,
    thinking=text,
    calls=st.lists(calls, max_size=3).map(tuple),
    blocks=st.lists(blocks, max_size=3).map(tuple),
    usage=usages,
    finish=st.none() | text,
    model=st.none() | text,
    timings=st.builds(
        Timings, prefill_ms=st.none() | st.floats(0, 1e6), total_ms=st.none() | st.floats(0, 1e6)
    ),
    notes=st.lists(text, max_size=2).map(tuple),
    raw=st.none() | text,
)


@settings(max_examples=200)
@given(responses)
def test_response_round_trips_through_json_text(resp: Response) -> None:
    assert codec.response_from_json(orjson.loads(orjson.dumps(codec.response_to_json(resp)))) == resp


@given(st.sampled_from(KNOWN_VERSIONS), text, st.none() | text, st.none() | text)
def test_recipe_round_trips(version: int, system: str, header: str | None, weights: str | None) -> None:
    recipe = Recipe(
        version=version,
        system=system,
        tools=(ToolSpec(name="fs-read", description="d", parameters={"type": "object"}),),
        limits=WindowLimits(
            high_water=100, low_water=50, max_result_tokens=10, output_reserve=8, ceiling=120
        ),
        context_size=200,
        keep_alive="5m",
        task_header=header,
        plan_header=None,
        weights=weights,
    )
    assert codec.recipe_from_json(codec.recipe_to_json(recipe)) == recipe


def test_a_recipes_own_flags_round_trip_and_only_known_ones_are_taken() -> None:
    """ADR 0113: flags beside the version are written only when there are any (older recipes
    serialise as before), add to the version's policy, and an unknown name is refused."""
    base = Recipe(
        version=19,
        system="s",
        tools=(),
        limits=WindowLimits(
            high_water=100, low_water=50, max_result_tokens=10, output_reserve=8, ceiling=120
        ),
        context_size=200,
    )
    assert "flags" not in codec.recipe_to_json(base)
    flagged = Recipe(**{**{k: getattr(base, k) for k in base.__slots__}, "extra_flags": (Flag.KEPT_HEADERS,)})
    raw = codec.recipe_to_json(flagged)
    assert raw["flags"] == ["kept_headers"]
    assert codec.recipe_from_json(raw) == flagged
    assert flagged.rules.flags == policy_for(19).flags | {Flag.KEPT_HEADERS}
    with pytest.raises(UnknownRecipeError, match="recipe flag 'pairs'"):
        codec.recipe_from_json({**raw, "flags": ["pairs"]})
    with pytest.raises(UnknownRecipeError, match="recipe flag 'later'"):
        codec.recipe_from_json({**raw, "flags": ["later"]})
    with pytest.raises(CorruptLogError, match="named twice"):
        codec.recipe_from_json({**raw, "flags": ["kept_headers", "kept_headers"]})


def test_new_optional_fields_are_written_only_when_present() -> None:
    """A reply's raw text, a message's and a recipe's weights: absent, the JSON (and so every digest
    recorded before they existed) is what it was."""
    assert "raw" not in codec.response_to_json(Response(text="a"))
    assert codec.response_to_json(Response(text="a", raw="a\n"))["raw"] == "a\n"
    plain = AssistantMessage(text="a", calls=(ToolCall(id="c", name="n", arguments="{}"),))
    assert codec.message_to_json(plain) == {
        "role": "assistant",
        "text": "a",
        "thinking": "",
        "calls": [{"id": "c", "name": "n", "arguments": "{}"}],
        "blocks": [],
    }
    raw = AssistantMessage(text="a", raw='a {"name": "n", "arguments": {}}')
    assert codec.message_from_json(codec.message_to_json(raw)) == raw


def test_unknown_usage_is_none_not_zero() -> None:
    assert codec.usage_from_json({}).cached_tokens is None
    assert codec.usage_from_json({"cached_tokens": 0}).cached_tokens == 0


@pytest.mark.parametrize("version", [3, 4, 5, 11, 13, 23])
def test_versions_the_seed_only_mentions_are_unknown(version: int) -> None:
    with pytest.raises(UnknownRecipeError, match=f"window-v{version}"):
        policy_for(version)


def test_flags_are_cumulative() -> None:
    assert Flag.PAIRS not in policy_for(15) and Flag.PAIRS in policy_for(16)
    assert policy_for(1).flags == frozenset()
    assert Flag.SUMMARIES in policy_for(19)


@pytest.mark.parametrize(
    ("payload", "where"),
    [
        ({"role": "robot"}, "role"),
        ({"role": "tool", "call_id": "c", "name": "n"}, "'text'"),
        ({"role": "user", "content": [{"type": "image", "digest": "d"}]}, "media_type"),
        ({"role": "assistant", "blocks": [{"type": "nope"}]}, "blocks[0].type"),
    ],
)
def test_bad_shapes_name_the_field(payload: dict[str, object], where: str) -> None:
    with pytest.raises(CorruptLogError, match=where.replace("[", r"\[").replace("]", r"\]")):
        codec.message_from_json(payload)
