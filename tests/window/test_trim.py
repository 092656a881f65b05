"""Prefix order, sticky elision in place, hysteresis, trim order and protection."""

from __future__ import annotations

from nodwyn.values.codec import message_to_json
from nodwyn.values.content import AssistantMessage, ToolMessage, UserMessage
from nodwyn.values.events import LlmReq
from nodwyn.values.recipe import WindowLimits
from nodwyn.window import build_window

from .sessions import ORIGIN_A, TOOLS, Sim, batch, started

LIM = WindowLimits(high_water=600, low_water=300, max_result_tokens=2000, output_reserve=50, ceiling=800)
ROOMY = WindowLimits(high_water=1500, low_water=1100, max_result_tokens=2000, output_reserve=50, ceiling=1800)


def grow_until_trim(sim: Sim, size: int = 600, limit: int = 30) -> int:
    """Batches of one result of ``size`` bytes until a request trims; returns its index in builds."""
    for i in range(limit):
        b, _, _ = batch(sim, [(f"c{i}", "r" * size)])
        if b.record.trim:
            return len(sim.built) - 1
    raise AssertionError("never trimmed")


def test_prefix_is_system_then_tools_in_catalog_order_then_messages() -> None:
    sim = started(19)
    sim.user("hello")
    b = sim.request()
    assert b.request.system == "You are a careful agent."
    assert [t.name for t in b.request.tools] == [t.name for t in TOOLS]
    raw = b.canonical
    assert raw.index(b'"messages"') < raw.index(b'"system"') < raw.index(b'"tools"')
    batch(sim, [("c1", "out")])
    b2 = sim.request()
    assert b2.request.messages[: len(b.request.messages)] == b.request.messages
    assert b2.record.moved is None


def test_below_high_water_nothing_is_elided() -> None:
    sim = started(19, limits=LIM)
    sim.user("task")
    for i in range(3):
        batch(sim, [(f"c{i}", "small result")])
    for built in sim.built:
        assert built.build.record.elided == () and built.build.record.trim is False
        assert built.build.record.high_water is None


def test_trim_elides_oldest_results_first_down_to_low_water_and_never_the_person() -> None:
    lim = ROOMY
    sim = started(19, limits=lim)
    sim.user("task")
    i = grow_until_trim(sim)
    built = sim.built[i]
    rec = built.build.record
    kinds = {sim.events[s - 1].kind for s in rec.elided}
    assert kinds == {"tool.result"}  # results suffice: no reply text elided
    results = [e.seq for e in sim.events[: built.seq] if e.kind == "tool.result"]
    assert list(rec.elided) == results[: len(rec.elided)]  # oldest first
    assert rec.estimate <= lim.low_water and rec.high_water == lim.high_water
    assert built.measure > lim.high_water
    assert rec.below_low_blocked is None
    first = built.build.request.messages[0]
    assert isinstance(first, UserMessage) and first == UserMessage(parts=first.parts)
    assert "task" in message_to_json(built.build.request.messages[0])["content"][0]["text"]


def test_elision_is_in_place_and_sticky_below_high_water() -> None:
    sim = started(19, limits=ROOMY)
    sim.user("task")
    i = grow_until_trim(sim)
    trimmed = sim.built[i].build
    elided = trimmed.record.elided
    nxt = sim.request()
    assert nxt.record.elided == () and nxt.record.moved is None  # below high water: appended only
    for seq in elided:
        k = trimmed.seqs.index(seq)
        m = nxt.request.messages[k]
        assert isinstance(m, ToolMessage) and m.text == f"[elided seq={seq}]"
    assert len(nxt.request.messages) == len(trimmed.request.messages) + 2  # reply + result appended


def test_hysteresis_then_nothing_until_the_next_crossing() -> None:
    sim = started(19, limits=ROOMY)
    sim.user("task")
    first = grow_until_trim(sim)
    second = grow_until_trim(sim)
    between = sim.built[first + 1 : second]
    assert between, "a trim to low water leaves room for several requests"
    for built in between:
        assert built.build.record.elided == () and built.build.record.moved is None
        assert built.measure <= ROOMY.high_water
    assert sim.built[second].measure > ROOMY.high_water


def test_reply_text_is_elided_after_results_and_its_calls_cleared() -> None:
    sim = started(15, limits=LIM)  # before pairs: results stay
    sim.user("task")
    for i in range(8):
        batch(sim, [(f"c{i}", "tiny")], text="t" * 350)
    trims = [b for b in sim.built if b.build.record.trim]
    assert trims
    rec = trims[0].build.record
    kinds = [sim.events[s - 1].kind for s in rec.elided]
    assert "llm.resp" in kinds and "tool.result" in kinds
    assert kinds.index("llm.resp") > 0 or kinds.count("tool.result") >= 1
    req = trims[0].build.request
    for seq in rec.elided:
        if sim.events[seq - 1].kind == "llm.resp":
            m = req.messages[trims[0].build.seqs.index(seq)]
            assert m == AssistantMessage(text=f"[elided seq={seq}]")


def test_four_most_recent_entries_are_protected() -> None:
    sim = started(19, limits=LIM)
    sim.user("task")
    batch(sim, [("c0", "r" * 900)])
    batch(sim, [("c1", "r" * 900)])
    b = sim.request()  # [user, a0, r0, a1, r1]: a0 alone is unprotected, and without pairs...
    assert b.record.trim is False or all(s not in b.seqs[-4:] for s in b.record.elided)
    assert b.record.below_low_blocked is True
    for seq in b.seqs[-4:]:
        assert seq not in b.record.elided


def test_estimate_is_a_token_per_three_canonical_bytes() -> None:
    sim = started(19)
    sim.user("hello")
    b = sim.request()
    assert b.record.estimate == -(-len(b.canonical) // 3)


def test_the_sticky_set_is_derived_from_the_log_not_from_memory() -> None:
    sim = started(19)
    sim.user("task")
    _, reply, (result,) = batch(sim, [("c", "an old result")])
    # an llm.req an earlier process wrote: its elided set is sticky for every later window
    origin = {"model": "model-a", "server": "alpha"}
    sim.add(
        LlmReq.from_data({"model": "m", "origin": origin, "elided": [result], "estimate": 0, "trim": True})
    )
    sim.reply(text="ok")
    fresh = build_window(sim.events, origin=ORIGIN_A)
    k = fresh.seqs.index(result)
    assert fresh.request.messages[k] == ToolMessage(call_id="c", name="shell", text=f"[elided seq={result}]")
    assert fresh.record.elided == () and reply in fresh.seqs
