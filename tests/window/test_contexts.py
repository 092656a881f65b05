"""Contexts: narrowings (compaction), widen, close, sub-agents; plans inside them (docs/adr/0013)."""

from __future__ import annotations

import pytest

from nodwyn.errors import CorruptLogError, NotFoundError
from nodwyn.values.content import AssistantMessage, TextPart, ToolCall, ToolMessage, UserMessage
from nodwyn.window import TurnOptions

from .sessions import ORIGIN_A, batch, started


def _texts(messages: tuple[object, ...]) -> list[str]:
    out: list[str] = []
    for m in messages:
        if isinstance(m, UserMessage):
            out.extend(p.text for p in m.parts if isinstance(p, TextPart))
        elif isinstance(m, AssistantMessage | ToolMessage):
            out.append(m.text)
    return out


def test_a_narrowing_has_its_own_system_prompt_and_starts_at_the_narrowing_point() -> None:
    sim = started(19)
    sim.user("old ask")
    batch(sim, [("a", "old result")])
    sim.open_ctx("n1", "narrow", system="Compacted. Handover: parser fixed.", lasting=True)
    sim.user("go on", "n1")
    b = sim.request("n1")
    assert b.request.system == "Compacted. Handover: parser fixed."
    assert _texts(b.request.messages) == ["# Task\n\ngo on"]
    assert b.record.moved == ("first",)
    with pytest.raises(NotFoundError, match="narrowed by 'n1'"):
        sim.window.build("main", origin=ORIGIN_A)


def test_widening_joins_the_narrowing_to_its_parent() -> None:
    sim = started(19)
    sim.user("ask")
    before = sim.request()
    sim.reply(text="looking")
    sim.open_ctx("n1", "narrow", system="Focus on one file.")
    sim.user("only parse.py", "n1")
    batch(sim, [("a", "parse.py contents")], ctx="n1")
    sim.widen_ctx("n1", "main")
    b = sim.request()
    assert b.request.system == "You are a careful agent."
    assert _texts(b.request.messages) == [
        "# Task\n\nask",
        "looking",
        "# Task\n\nonly parse.py",
        "",
        "parse.py contents",
    ]
    assert b.request.messages[: len(before.request.messages)] == before.request.messages
    assert b.record.moved is None
    with pytest.raises(NotFoundError, match="widened"):
        sim.window.build("n1", origin=ORIGIN_A)


def test_closing_a_narrowing_folds_it_away_with_its_plan_and_shows_its_result() -> None:
    sim = started(19)
    sim.user("ask")
    sim.request()
    sim.reply(text="let me look aside")
    sim.open_ctx("n1", "narrow")
    sim.user("side task", "n1")
    sim.plan("side plan", "n1")
    batch(sim, [("a", "side result")], ctx="n1", blocks=())
    sim.close_ctx("n1", "main", "the side task found nothing")
    b = sim.request()
    assert _texts(b.request.messages) == ["# Task\n\nask", "let me look aside", "the side task found nothing"]


def test_a_sub_agent_has_its_own_conversation_and_answers_as_its_parents_result() -> None:
    sim = started(19)
    sim.user("ask")
    sim.request()
    sim.reply(calls=(ToolCall(id="spawn1", name="spawn", arguments="{}"),))
    sim.open_ctx("s1", "sub", system="You are a sub-agent.", offered_tools=["fs-read"], parent_call="spawn1")
    sim.user("find the file", "s1")
    b = sim.request("s1")
    assert b.request.system == "You are a sub-agent."
    assert [t.name for t in b.request.tools] == ["fs-read"] and b.record.offered_tools == ("fs-read",)
    assert _texts(b.request.messages) == ["# Task\n\nfind the file"]
    sim.reply("s1", text="it is parse.py")
    sim.close_ctx("s1", "main", "it is parse.py")
    sim.result("spawn1", "it is parse.py", name="spawn")
    parent = sim.request()
    assert _texts(parent.request.messages) == ["# Task\n\nask", "", "it is parse.py"]
    assert parent.request.tools == sim.window.build(origin=ORIGIN_A, turn=TurnOptions()).request.tools


def test_a_plan_written_inside_a_compacted_context_shows_from_v15_only() -> None:
    for version, shown in ((14, False), (15, True)):
        sim = started(version)
        sim.user("ask")
        sim.open_ctx("n1", "narrow", system="Compacted.", lasting=True)
        sim.user("continue", "n1")
        sim.plan("the plan", "n1")
        b = sim.request("n1")
        visible = "the plan" in b.request.system or any("the plan" in t for t in _texts(b.request.messages))
        assert visible is shown


def test_context_misuse_is_refused_naming_the_event() -> None:
    sim = started(19)
    sim.open_ctx("n1", "narrow", lasting=True)
    with pytest.raises(CorruptLogError, match="lasting narrowing"):
        sim.close_ctx("n1", "main")
    sim2 = started(19)
    sim2.open_ctx("s1", "sub")
    sim2.close_ctx("s1", "main")
    with pytest.raises(CorruptLogError, match="'s1', which was closed"):
        sim2.user("late", "s1")
    with pytest.raises(CorruptLogError, match="already exists"):
        sim2.open_ctx("s1", "sub")
    with pytest.raises(NotFoundError, match="no context 'nope'"):
        sim2.window.build("nope", origin=ORIGIN_A)
