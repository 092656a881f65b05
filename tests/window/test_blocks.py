"""Thinking (v14) and reasoning blocks (v18): back on their reply, only to their origin, stale
after a fold or an elision of an earlier entry."""

from __future__ import annotations

from nodwyn.values.content import AssistantMessage
from nodwyn.values.events import ModelSwitch
from nodwyn.values.recipe import WindowLimits
from nodwyn.window import build_window

from .sessions import ORIGIN_A, ORIGIN_B, batch, block, started

DETAILS = block(ORIGIN_A, '[{"type":"reasoning.encrypted","data":"QUJD"}]', kind="reasoning_details")


def _reply(messages: tuple[object, ...], index: int = 0) -> AssistantMessage:
    replies = [m for m in messages if isinstance(m, AssistantMessage)]
    return replies[index]


def test_thinking_goes_back_on_its_reply_from_v14() -> None:
    for version, kept in ((12, ""), (14, "why")):
        sim = started(version)
        sim.user("ask")
        batch(sim, [("a", "ok")], thinking="why")
        assert _reply(sim.request().request.messages).thinking == kept


def test_blocks_go_back_on_their_reply_each_where_it_was_from_v18() -> None:
    sim = started(18)
    sim.user("ask")
    blocks = (block(ORIGIN_A, "sig-1", position=0), block(ORIGIN_A, "sig-2", position=1))
    batch(sim, [("a", "1"), ("b", "2")], thinking="t", blocks=blocks)
    b = sim.request()
    reply = _reply(b.request.messages)
    assert reply.blocks == blocks and reply.thinking == "t"  # the dialect decides what goes as text
    old = started(17)
    old.user("ask")
    batch(old, [("a", "1")], blocks=blocks)
    assert _reply(old.request().request.messages).blocks == ()


def test_reasoning_details_keep_the_thinking_on_the_message() -> None:
    sim = started(19)
    sim.user("ask")
    batch(sim, [("a", "1")], thinking="summary of reasoning", blocks=(DETAILS,))
    reply = _reply(sim.request().request.messages)
    assert reply.blocks == (DETAILS,) and reply.thinking == "summary of reasoning"


def test_blocks_go_only_to_their_origin_and_come_back_after_a_switch_and_back() -> None:
    sim = started(19)
    sim.user("ask")
    batch(sim, [("a", "1")], thinking="t", blocks=(DETAILS,))
    b_a = sim.request(origin=ORIGIN_A)
    sim.reply(text="ok")
    sim.add(ModelSwitch(model=ORIGIN_B.model))
    b_b = sim.request(origin=ORIGIN_B)
    reply_b = _reply(b_b.request.messages)
    assert reply_b.blocks == () and reply_b.thinking == "t"  # the thinking as before
    assert "origin" in (b_b.record.moved or ())
    sim.reply(text="ok")
    sim.add(ModelSwitch(model=ORIGIN_A.model))
    b_a2 = sim.request(origin=ORIGIN_A)
    assert _reply(b_a2.request.messages).blocks == (DETAILS,)  # where they were
    assert _reply(b_a2.request.messages) == _reply(b_a.request.messages)


def test_a_fold_of_an_earlier_entry_drops_the_blocks_of_replies_made_before_it() -> None:
    sim = started(19)
    sim.user("ask")
    _, _, (r1,) = batch(sim, [("a", "stale read")])
    batch(sim, [("b", "2")], thinking="t2", blocks=(block(ORIGIN_A, "before-fold"),))
    sim.fold(r1, "[folded]")
    batch(sim, [("c", "3")], thinking="t3", blocks=(block(ORIGIN_A, "after-fold"),))
    b = sim.request()
    before, after = _reply(b.request.messages, 1), _reply(b.request.messages, 2)
    assert before.blocks == () and before.thinking == "t2"
    assert after.blocks == (block(ORIGIN_A, "after-fold"),)


def test_an_elision_of_an_earlier_entry_drops_later_blocks_and_elided_replies_take_theirs() -> None:
    lim = WindowLimits(high_water=900, low_water=500, max_result_tokens=2000, output_reserve=50, ceiling=1200)
    sim = started(19, limits=lim)
    sim.user("ask")
    for i in range(8):
        batch(sim, [(f"c{i}", "r" * 250)], thinking="t", blocks=(block(ORIGIN_A, f"s{i}" * 40),))
    trims = [x for x in sim.built if x.build.record.trim]
    assert trims
    t = trims[0]
    first_elided = min(t.build.record.elided)
    for seq, m in zip(t.build.seqs, t.build.request.messages, strict=True):
        if isinstance(m, AssistantMessage) and seq > first_elided and not m.text.startswith("[elided"):
            assert m.blocks == () and m.thinking == "t"
    # blocks count toward the estimate: the same session without blocks trims later
    plain = started(19, limits=lim)
    plain.user("ask")
    for i in range(8):
        batch(plain, [(f"c{i}", "r" * 250)], thinking="t")
    first_plain = next(i for i, x in enumerate(plain.built) if x.build.record.trim)
    assert first_plain > sim.built.index(t)


def test_replay_rebuilds_the_blocks_with_the_request() -> None:
    sim = started(19)
    sim.user("ask")
    batch(sim, [("a", "1")], blocks=(DETAILS,))
    b = sim.request()
    again = build_window(sim.before(sim.built[-1].seq), origin=ORIGIN_A)
    assert again.digest == b.digest and _reply(again.request.messages).blocks == (DETAILS,)


def test_a_reply_made_after_an_elision_keeps_its_blocks() -> None:
    lim = WindowLimits(high_water=900, low_water=500, max_result_tokens=2000, output_reserve=50, ceiling=1200)
    sim = started(19, limits=lim)
    sim.user("ask")
    for i in range(10):
        batch(sim, [(f"c{i}", "r" * 400)])
    trims = [x for x in sim.built if x.build.record.trim]
    assert trims
    after = block(ORIGIN_A, "made-after-the-trim")
    batch(sim, [("late", "ok")], thinking="t", blocks=(after,))
    b = sim.request()
    assert b.record.elided == ()
    assert _reply(b.request.messages, -1).blocks == (after,)
