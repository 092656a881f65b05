"""Tool-call pairs (v16): a result never without its call, a call never without its results."""

from __future__ import annotations

from typing import Any

from nodwyn.values.content import AssistantMessage, ToolMessage
from nodwyn.values.events import LlmReq
from nodwyn.values.recipe import WindowLimits
from nodwyn.window import build_window

from .sessions import Sim, batch, recipe, started

LIM = WindowLimits(high_water=900, low_water=500, max_result_tokens=2000, output_reserve=50, ceiling=1200)
BIG = "reply text " * 40  # ~150 tokens of reply


def _tools(b_messages: tuple[object, ...]) -> list[ToolMessage]:
    return [m for m in b_messages if isinstance(m, ToolMessage)]


def _pairs_ok(messages: tuple[object, ...]) -> bool:
    batch_ids: set[str] | None = None
    for m in messages:
        if isinstance(m, AssistantMessage):
            batch_ids = {c.id for c in m.calls}
        elif isinstance(m, ToolMessage) and (batch_ids is None or m.call_id not in batch_ids):
            return False
    return True


def _fill(sim: Sim, batches: list[list[tuple[str, str]]], **kw: Any) -> list[tuple[int, list[int]]]:
    out = []
    for results in batches:
        _, reply, seqs = batch(sim, results, text=BIG, **kw)
        out.append((reply, seqs))
    return out


def _first_trim(sim: Sim) -> LlmReq:
    """The record of the first request that trimmed (that build becomes ``sim.built[-1]``)."""
    sim.request()
    first = next(b for b in sim.built if b.build.record.trim)
    sim.built.append(first)
    return first.build.record


def test_eliding_a_multi_call_batch_omits_all_its_results_in_any_order() -> None:
    sim = started(16, limits=LIM)
    sim.user("task")
    made = _fill(sim, [[("a", "1"), ("b", "2"), ("c", "3")]], order=[2, 0, 1])
    _fill(sim, [[(f"x{i}", "ok")] for i in range(5)])
    rec = _first_trim(sim)
    reply, results = made[0]
    assert reply in rec.elided
    assert set(results) <= set(rec.elided)
    b = sim.built[-1].build
    assert all(s not in b.seqs for s in results)  # omitted, not shown as markers
    assert _pairs_ok(b.request.messages)


def test_a_reused_call_id_refers_to_its_latest_batch() -> None:
    sim = started(16, limits=LIM)
    sim.user("task")
    (r1, s1), (r2, s2) = _fill(sim, [[("same", "first")], [("same", "second")]])
    _fill(sim, [[(f"x{i}", "ok")] for i in range(4)])
    rec = _first_trim(sim)
    b = sim.built[-1].build
    assert r1 in rec.elided and s1[0] in rec.elided
    if r2 not in rec.elided:
        assert s2[0] in b.seqs  # the second batch's result stays with the second batch
    assert _pairs_ok(b.request.messages)


def test_failed_results_are_paired_like_any_other() -> None:
    sim = started(16, limits=LIM)
    sim.user("task")
    (reply, seqs), *_ = _fill(sim, [[("f1", "boom"), ("f2", "ok")]], errors=(0,))
    _fill(sim, [[(f"x{i}", "ok")] for i in range(5)])
    rec = _first_trim(sim)
    assert reply in rec.elided and set(seqs) <= set(rec.elided)
    assert _pairs_ok(sim.built[-1].build.request.messages)


def test_a_protected_result_protects_its_batch() -> None:
    sim = started(16, limits=LIM)
    sim.user("task " + "w " * 200)
    # one old batch of five calls: its last results are among the four most recent entries
    b0 = sim.request()
    del b0
    _, reply, seqs = batch(sim, [(f"p{i}", "r" * 600) for i in range(5)], text=BIG)
    b = sim.request()
    assert b.record.trim is True
    assert reply not in b.record.elided  # protected by its results
    assert seqs[0] in b.record.elided  # an unprotected result is still elided in place
    assert b.record.below_low_blocked is True
    assert _pairs_ok(b.request.messages)


def test_an_incomplete_batch_is_not_newly_elided() -> None:
    sim = started(16, limits=LIM)
    sim.user("task")
    sim.request()
    from nodwyn.values.content import ToolCall

    calls = tuple(ToolCall(id=i, name="shell", arguments="{}") for i in ("done", "lost"))
    lonely = sim.reply(text=BIG, calls=calls).seq
    sim.result("done", "ok")
    _fill(sim, [[(f"x{i}", "ok")] for i in range(6)])
    sim.request()
    trims = [b.build.record for b in sim.built if b.build.record.trim]
    assert trims
    assert all(lonely not in rec.elided for rec in trims)
    assert any(sim.events[s - 1].kind == "llm.resp" for rec in trims for s in rec.elided)


def test_sticky_estimates_leave_with_the_omitted_results() -> None:
    sim = started(16, limits=LIM)
    sim.user("task")
    _fill(sim, [[("a", "r" * 300), ("b", "r" * 300)]])
    _fill(sim, [[(f"x{i}", "ok")] for i in range(5)])
    sim.request()
    trims = [b for b in sim.built if b.build.record.trim]
    assert trims and any(len(b.build.record.elided) >= 3 for b in trims)  # a reply and its two results
    for built in sim.built:  # the recorded estimate is the request's, with omitted results gone
        assert built.build.record.estimate == -(-len(built.build.canonical) // 3)


def test_before_v16_an_elided_reply_leaves_its_results_as_they_were() -> None:
    sim = started(15, limits=LIM)
    sim.user("task")
    (reply, seqs), *_ = _fill(sim, [[("a", "1"), ("b", "2")]])
    _fill(sim, [[(f"x{i}", "ok")] for i in range(5)])
    rec = _first_trim(sim)
    b = sim.built[-1].build
    assert reply in rec.elided
    assert all(s in b.seqs for s in seqs)  # the malformed old shape: orphan results kept
    assert not _pairs_ok(b.request.messages)


def test_a_v15_to_v16_resume_omits_results_of_batches_elided_before() -> None:
    sim = started(15, limits=LIM)
    sim.user("task")
    # a big reply whose four results are the four most recent entries: v15 elides the reply alone
    _, reply, seqs = batch(sim, [(f"r{i}", "r" * 300) for i in range(4)], text=BIG * 3)
    old = sim.request()
    assert reply in old.record.elided and not set(seqs) & set(old.record.elided)
    assert all(s in old.seqs for s in seqs)  # v15: orphans, as the old recipe built them
    sim.reply(text="done")
    sim.resume(recipe(16, limits=LIM))
    b = sim.request()
    assert set(seqs) <= set(b.record.elided) and b.record.trim is True
    assert "recipe" in (b.record.moved or ())
    assert all(s not in b.seqs for s in seqs)
    assert _pairs_ok(b.request.messages)
    for built in sim.built:  # old and new requests replay to their recorded digests
        again = build_window(sim.before(built.seq), built.ctx, origin=built.origin, turn=built.turn)
        assert again.digest == built.build.digest
