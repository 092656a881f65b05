"""Every known recipe version's rules stay executable: each rule shows exactly when its flag is on."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodwyn.errors import UnknownRecipeError
from nodwyn.values.content import AssistantMessage, TextPart, ToolMessage, UserMessage
from nodwyn.values.recipe import KNOWN_VERSIONS, V20_TUNING, Flag, Rules, WindowLimits, policy_for, rules_for
from nodwyn.window import TurnOptions

from .sessions import ORIGIN_A, Sim, batch, block, recipe, started

IMG = {
    "digest": "sha256:" + "ef" * 32,
    "media_type": "image/png",
    "width": 600,
    "height": 400,
    "name": "a.png",
}
ROOM = WindowLimits(high_water=5000, low_water=2500, max_result_tokens=80, output_reserve=200, ceiling=6000)
LONG = "".join(f"row {i} {'z' * 30}\n" for i in range(400))


def _session(version: int) -> Sim:
    sim = started(version, limits=ROOM, task_header="## Ask", plan_header="## Steps")
    sim.user("do it", images=[IMG])
    sim.plan("1. look")
    _, _, (r1,) = batch(sim, [("a", "early output")], thinking="hmm", blocks=(block(ORIGIN_A, "sig"),))
    sim.fold(r1, "[folded]")
    batch(sim, [("b", LONG)], name="fs-read", thinking="hmm2", blocks=(block(ORIGIN_A, "sig2"),))
    return sim


@pytest.mark.parametrize("version", KNOWN_VERSIONS)
def test_each_rule_applies_exactly_from_its_version(version: int) -> None:
    flags = policy_for(version).flags
    sim = _session(version)
    b = sim.request(turn=TurnOptions(no_tools=True))
    req, rec = b.request, b.record
    users = [m for m in req.messages if isinstance(m, UserMessage)]
    replies = [m for m in req.messages if isinstance(m, AssistantMessage)]
    results = [m for m in req.messages if isinstance(m, ToolMessage)]
    in_conv = Flag.IN_CONVERSATION in flags
    header = "## Ask" if Flag.HEADERS in flags else "# Task"
    if in_conv:
        assert req.system == "You are a careful agent."
        assert users[0].parts[0] == TextPart(text=f"{header}\n\ndo it")
    else:
        assert req.system.startswith(f"You are a careful agent.\n\n{header}\n\ndo it")
    # the person's message, its attachment from v12, the plan as a message from v15
    assert len(users) == 1 + (Flag.IMAGES in flags) + in_conv
    assert (req.tools == ()) is (Flag.TOOL_SUBSETS in flags)
    assert (req.max_output is not None) is (Flag.OUTPUT_CAP in flags)
    assert (results[0].text == "[folded]") is (Flag.FOLDS in flags)
    assert (replies[0].thinking == "hmm") is (Flag.THINKING in flags)
    # the fold is of a result after the first reply: no reply was made before a fold of an earlier entry
    assert (replies[0].blocks != ()) is (Flag.BLOCKS in flags)
    assert (replies[1].blocks != ()) is (Flag.BLOCKS in flags)
    assert rec.elided == ()
    assert ("file lines" in results[1].text) is (Flag.NAMED_CUTS in flags)
    assert (len(results[1].text) > 2 * 80 * 3) is (Flag.WIDE_READS in flags)
    assert (rec.no_tools is not None) is (Flag.TOOL_SUBSETS in flags)
    # and every version replays from its record
    again = sim.replayed(sim.built[-1].seq)
    assert again.digest == b.digest and again.record == rec


@pytest.mark.parametrize("version", [0, 3, 4, 5, 11, 13, 23])
def test_versions_the_seed_only_mentions_are_refused(version: int) -> None:
    with pytest.raises(UnknownRecipeError):
        started(version)


def test_rules_name_every_flag_and_resolve_once() -> None:
    """Each flag is one boolean field of ``Rules`` named as it; a recipe's rules are its version's
    flags plus its own, built once and shared by every access."""
    for version in KNOWN_VERSIONS:
        rules = rules_for(version)
        assert rules.flags == policy_for(version).flags
        for flag in Flag:
            assert getattr(rules, flag.value) is (flag in policy_for(version).flags)
    assert Rules.of(20, Flag).flags == frozenset(Flag)
    assert Rules.of(20, ()).flags == frozenset()
    assert rules_for(16).unit_trim is False and rules_for(20).unit_trim is True
    plain = recipe(19)
    flagged = replace(plain, extra_flags=(Flag.KEPT_HEADERS,))
    assert flagged.rules.kept_headers and not plain.rules.kept_headers
    assert flagged.rules is replace(flagged, system="other").rules  # resolved once per version+flags
    assert flagged.rules.tuning == V20_TUNING


def test_v21_dial_positions_pick_their_constants_and_are_recorded() -> None:
    """window-v21's trim-depth dial (ADR 0390): each position its own constants, None the default,
    recorded in the recipe and read back; a position on an older version, or an unknown one, is
    refused; v20 keeps its constants."""
    from nodwyn.values.codec import recipe_from_json, recipe_to_json
    from nodwyn.values.recipe import DEFAULT_TRIM_DEPTH, TRIM_DEPTHS, V21_TUNING

    assert rules_for(20).tuning == V20_TUNING and rules_for(21).tuning == V21_TUNING
    # the default position keeps v20's constants (measured: a smaller head cost more, ADR 0390)
    assert TRIM_DEPTHS[DEFAULT_TRIM_DEPTH] == V21_TUNING == V20_TUNING
    growths = [t.growth for t in TRIM_DEPTHS.values()]
    heads = [t.head for t in TRIM_DEPTHS.values()]
    assert growths == sorted(growths) and heads == sorted(heads)  # "keep more" to "pay less"
    for depth in TRIM_DEPTHS:
        r = replace(recipe(21), trim_depth=depth)
        assert r.rules.tuning == TRIM_DEPTHS[depth]
        assert recipe_to_json(r)["trim_depth"] == depth
        assert recipe_from_json(recipe_to_json(r)) == r
    assert "trim_depth" not in recipe_to_json(recipe(21)) and "trim_depth" not in recipe_to_json(recipe(20))
    with pytest.raises(UnknownRecipeError, match="no trim-depth dial"):
        _ = replace(recipe(20), trim_depth="pay-less").rules
    with pytest.raises(UnknownRecipeError, match="not a position"):
        recipe_from_json({**recipe_to_json(recipe(21)), "trim_depth": "cheapest"})


def test_v21_dial_changes_what_a_trim_keeps() -> None:
    """The dial's ends trim the same session differently, and each replays from its record."""
    kept: dict[str, int] = {}
    for depth in ("keep-more", "pay-less"):
        sim = Sim()
        sim.start(replace(recipe(21, limits=ROOM), trim_depth=depth))
        sim.user("go")
        for i in range(40):
            batch(sim, [(f"c{i}", "x" * 900)])
        builds = [sim.request() for _ in range(1)]
        kept[depth] = len(builds[-1].request.messages)
        again = sim.replayed(sim.built[-1].seq)
        assert again.digest == builds[-1].digest
    assert kept["keep-more"] > kept["pay-less"]
