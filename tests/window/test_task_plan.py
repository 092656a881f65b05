"""Task and plan (v15 in the conversation; before, in the system prompt), headers (v6)."""

from __future__ import annotations

from nodwyn.values.content import TextPart, ToolCall, UserMessage
from nodwyn.values.recipe import WindowLimits
from nodwyn.window import build_window

from .sessions import ORIGIN_A, batch, started


def _texts(messages: tuple[object, ...]) -> list[str]:
    return [
        p.text for m in messages if isinstance(m, UserMessage) for p in m.parts if isinstance(p, TextPart)
    ]


def test_each_request_is_a_user_message_under_the_task_header_and_the_system_never_changes() -> None:
    sim = started(15)
    sim.user("first ask")
    b1 = sim.request()
    sim.reply(text="done")
    sim.user("second ask")
    b2 = sim.request()
    assert b1.request.system == b2.request.system == "You are a careful agent."
    assert _texts(b2.request.messages) == ["# Task\n\nfirst ask", "# Task\n\nsecond ask"]
    assert b2.record.moved is None  # a new request adds to the cached prefix


def test_a_plan_waits_for_the_next_non_result_message_then_stays_there() -> None:
    sim = started(19)
    sim.user("ask")
    sim.request()
    calls = tuple(ToolCall(id=i, name="plan-write", arguments="{}") for i in ("p", "q"))
    sim.reply(calls=calls)
    sim.result("p", "plan saved")
    plan = sim.plan("1. read\n2. fix")
    sim.result("q", "second result")
    b = sim.request()
    assert b.seqs[-1] == plan.seq  # at the end of the window, after the batch's results
    assert _texts(b.request.messages)[-1] == "# Plan\n\n1. read\n2. fix"
    sim.reply(text="following the plan")
    b2 = sim.request()
    k = len(b.request.messages)
    assert b2.request.messages[:k] == b.request.messages and b2.record.moved is None


def test_a_plan_rewritten_in_the_same_batch_replaces_it_before_any_window_shows_it() -> None:
    sim = started(19)
    sim.user("ask")
    batch(sim, [("p", "saved")], name="plan-write")
    sim.plan("first draft")
    sim.plan("second draft")
    b = sim.request()
    texts = _texts(b.request.messages)
    assert "# Plan\n\nsecond draft" in texts and "# Plan\n\nfirst draft" not in texts


def test_task_and_plan_are_never_trimmed() -> None:
    lim = WindowLimits(high_water=700, low_water=300, max_result_tokens=2000, output_reserve=50, ceiling=900)
    sim = started(19, limits=lim)
    sim.user("the ask")
    sim.plan("the plan")
    for i in range(8):
        batch(sim, [(f"c{i}", "r" * 500)], text="t" * 100)
    b = sim.request()
    assert any(x.build.record.trim for x in sim.built)
    assert _texts(b.request.messages)[:2] == ["# Task\n\nthe ask", "# Plan\n\nthe plan"]


def test_headers_come_from_the_recipe_from_v6_and_are_the_default_text_before() -> None:
    sim = started(15, task_header="## What to do", plan_header="## How")
    sim.user("ask")
    sim.plan("steps")
    assert _texts(sim.request().request.messages) == ["## What to do\n\nask", "## How\n\nsteps"]
    old = started(2, task_header="## What to do")
    old.user("ask")
    assert old.request().request.system.endswith("# Task\n\nask")


def test_before_v15_the_system_prompt_carries_the_task_and_its_plan() -> None:
    sim = started(14)
    sim.user("first ask")
    sim.plan("its plan")
    b1 = sim.request()
    assert b1.request.system == "You are a careful agent.\n\n# Task\n\nfirst ask\n\n# Plan\n\nits plan"
    assert _texts(b1.request.messages) == ["first ask"]  # the message itself, without header
    sim.reply(text="ok")
    sim.user("second ask")
    b2 = sim.request()
    assert (
        b2.request.system == "You are a careful agent.\n\n# Task\n\nsecond ask"
    )  # the plan left with its turn
    assert "system" in (b2.record.moved or ())


def test_an_absent_header_rebuilds_older_logs_byte_for_byte() -> None:
    sim = started(15)
    sim.user("ask")
    b = sim.request()
    again = build_window(sim.before(sim.built[-1].seq), origin=ORIGIN_A)
    assert again.canonical == b.canonical
