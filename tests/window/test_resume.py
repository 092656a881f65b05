"""A resume records a recipe; the next request follows it, and earlier requests still replay."""

from __future__ import annotations

from nodwyn.values.request import ToolSpec
from nodwyn.window import build_window

from .sessions import TOOLS, batch, recipe, started


def test_a_resume_with_the_same_recipe_appends() -> None:
    sim = started(19)
    sim.user("ask")
    batch(sim, [("a", "out")])
    sim.resume(recipe(19))
    b = sim.request()
    assert b.record.moved is None


def test_a_resume_with_a_changed_catalog_and_prompt_moves_and_every_request_still_replays() -> None:
    sim = started(19)
    sim.user("ask")
    batch(sim, [("a", "out")])
    extra = ToolSpec(name="grep", description="Search.", parameters={"type": "object"})
    sim.resume(recipe(19, system="You are a careful agent, now with grep.", tools=(*TOOLS, extra)))
    b = sim.request()
    assert b.request.system.endswith("with grep.") and b.request.tools[-1].name == "grep"
    assert {"recipe", "system", "tools"} <= set(b.record.moved or ())
    for built in sim.built:
        again = build_window(sim.before(built.seq), built.ctx, origin=built.origin, turn=built.turn)
        assert again.digest == built.build.digest


def test_a_resume_with_a_smaller_cap_recuts_results_from_then_on() -> None:
    from nodwyn.values.recipe import WindowLimits

    wide = WindowLimits(
        high_water=50_000, low_water=25_000, max_result_tokens=5_000, output_reserve=100, ceiling=60_000
    )
    narrow = WindowLimits(
        high_water=50_000, low_water=25_000, max_result_tokens=100, output_reserve=100, ceiling=60_000
    )
    sim = started(19, limits=wide)
    sim.user("ask")
    long = "".join(f"line {i}\n" for i in range(2000))
    batch(sim, [("a", long)])
    first = sim.request()
    sim.resume(recipe(19, limits=narrow))
    second = sim.request()
    assert len(second.canonical) < len(first.canonical) and "recipe" in (second.record.moved or ())
