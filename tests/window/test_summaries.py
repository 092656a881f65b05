"""Revocable summaries (window-v2)."""

from __future__ import annotations

from typing import Any

from nodwyn.values.content import AssistantMessage, ToolCall
from nodwyn.values.recipe import Flag, WindowLimits
from nodwyn.window import build_window

from .sessions import ORIGIN_A, Sim, batch, started


def _turns(sim: Sim, n: int, start: int = 0) -> list[int]:
    """n person's turns, each with one tool batch and a closing reply; returns the user.msg seqs."""
    users = []
    for i in range(start, start + n):
        users.append(sim.user(f"ask {i}").seq)
        batch(sim, [(f"c{i}", f"result {i}")])
        sim.request()
        sim.reply(text=f"answer {i}")
    return users


def _summaries(sim: Sim) -> list[str]:
    b = sim.request()
    return [
        m.text
        for m in b.request.messages
        if isinstance(m, AssistantMessage) and m.text.startswith("[summary")
    ]


def test_a_summary_replaces_its_span_with_an_assistant_message() -> None:
    sim = started(2)
    u = _turns(sim, 3)
    s = sim.summary(u[0], u[1] - 1, "They fixed the parser.")
    b = sim.request()
    assert b.seqs[0] == s.seq
    first = b.request.messages[0]
    assert first == AssistantMessage(text=f"[summary of seq {u[0]}-{u[1] - 1}]\n\nThey fixed the parser.")
    assert not set(range(u[0], u[1])) & set(b.seqs)
    assert "summary" in (b.record.moved or ())


def test_the_latest_two_user_turns_stay_outside_replacement() -> None:
    sim = started(2)
    u = _turns(sim, 2)
    sim.summary(u[0], u[1] - 1, "too recent")
    assert _summaries(sim) == []  # the span is one of the latest two turns
    sim.reply(text="ok")
    _turns(sim, 1, start=5)
    assert len(_summaries(sim)) == 1  # now two newer turns follow it


def test_a_newer_overlapping_summary_supersedes_an_older_one() -> None:
    sim = started(2)
    u = _turns(sim, 5)
    sim.summary(u[0], u[1] - 1, "older")
    sim.summary(u[0], u[2] - 1, "newer")
    texts = _summaries(sim)
    assert len(texts) == 1 and texts[0].endswith("newer")
    sim.reply(text="ok")
    sim.summary(u[2], u[3] - 1, "disjoint")
    assert [t.split("\n\n")[1] for t in _summaries(sim)] == ["newer", "disjoint"]


def test_a_revoked_or_stale_summary_exposes_its_source() -> None:
    sim = started(2)
    u = _turns(sim, 3)
    s = sim.summary(u[0], u[1] - 1, "gone soon")
    assert len(_summaries(sim)) == 1
    sim.reply(text="ok")
    sim.revoke(s.seq)
    b = sim.request()
    assert _summaries(sim) == [] and u[0] in b.seqs
    sim.reply(text="ok")
    sim.summary(u[0], u[1] - 1, "stale", digest="sha256:not-the-source")
    assert _summaries(sim) == []


def test_a_superseded_summary_never_comes_back_when_the_newer_is_revoked_or_stale() -> None:
    """ADR 0300: with the recipe's ``superseded`` flag, revoking the newer of two overlapping
    summaries, or a newer one gone stale, shows the span's source, never the older text."""
    sim = started(2, extra_flags=(Flag("superseded"),))
    u = _turns(sim, 5)
    sim.summary(u[0], u[1] - 1, "older")
    newer = sim.summary(u[0], u[2] - 1, "newer")
    assert [t.split("\n\n")[1] for t in _summaries(sim)] == ["newer"]
    sim.reply(text="ok")
    sim.revoke(newer.seq)
    b = sim.request()
    assert _summaries(sim) == [] and u[0] in b.seqs
    sim.reply(text="ok")
    sim.summary(u[0], u[3] - 1, "stale", digest="sha256:not-the-source")
    b = sim.request()
    assert _summaries(sim) == [] and u[0] in b.seqs


def test_without_the_flag_an_older_log_still_shows_the_older_summary() -> None:
    """A recipe without ``superseded`` (every log recorded before ADR 0300) rebuilds as built."""
    sim = started(2)
    u = _turns(sim, 5)
    sim.summary(u[0], u[1] - 1, "older")
    newer = sim.summary(u[0], u[2] - 1, "newer")
    sim.request()
    sim.reply(text="ok")
    sim.revoke(newer.seq)
    assert [t.split("\n\n")[1] for t in _summaries(sim)] == ["older"]


def test_a_span_that_splits_a_call_from_its_result_is_not_used() -> None:
    sim = started(16)
    sim.user("ask")
    sim.request()
    reply = sim.reply(calls=(ToolCall(id="x", name="shell", arguments="{}"),))
    result = sim.result("x", "out")
    sim.request()
    sim.reply(text="done")
    _turns(sim, 2, start=1)
    sim.summary(2, reply.seq, "cuts the pair")
    assert _summaries(sim) == []
    assert result.seq > reply.seq


def test_a_lifecycle_change_resets_the_sticky_elided_set() -> None:
    lim = WindowLimits(high_water=900, low_water=400, max_result_tokens=2000, output_reserve=50, ceiling=1200)
    sim = started(16, limits=lim)
    u = _turns(sim, 2)
    for i in range(6):
        batch(sim, [(f"big{i}", "r" * 300)])
    sim.reply(text="ok")
    u += _turns(sim, 2, start=2)
    elided = {s for x in sim.built for s in x.build.record.elided}
    assert elided
    sim.reply(text="ok")
    sim.summary(u[0], u[1] - 1, "the first turn, short")
    b = sim.request()
    # the window is rebuilt with no inherited elisions: it trims again, from its own decision
    again = set(b.record.elided) & elided
    assert again and b.record.trim is True
    assert all(s >= u[1] for s in again)


def test_later_edits_never_change_an_earlier_request() -> None:
    sim = started(2)
    u = _turns(sim, 3)
    before = sim.request()
    seq = sim.built[-1].seq
    sim.reply(text="ok")
    s = sim.summary(u[0], u[1] - 1, "later edit")
    sim.revoke(s.seq)
    assert build_window(sim.events[: seq - 1], origin=ORIGIN_A).digest == before.digest


def test_window_v1_ignores_summaries() -> None:
    sim = started(1)
    u = _turns(sim, 3)
    sim.summary(u[0], u[1] - 1, "ignored")
    assert _summaries(sim) == []


def test_a_withheld_image_in_a_summarised_span_moves_nothing_and_replays_the_same() -> None:
    """Found by the v20 property tests: an image a summary replaces is not shown, so
    its being withheld is not a reason the next request moved; the live build said ``images``
    where replay, which builds with the record's withheld list, did not."""
    img: dict[str, Any] = {
        "digest": "sha256:" + "cd" * 32,
        "media_type": "image/png",
        "width": 64,
        "height": 64,
    }
    held = {img["digest"]: "its copy in the attachment store is missing"}
    sim = started(19)
    first = sim.user("look at this", images=[img]).seq
    batch(sim, [("c0", "result 0")])
    u = _turns(sim, 3)
    sim.summary(first, u[0] - 1, "They looked at a picture.")
    b1 = sim.request(withheld=held)
    sim.reply(text="noted")
    b2 = sim.request(withheld=held)
    assert b1.record.withheld_images is None  # the image is in the summarised span
    assert b2.record.moved is None
    for built in sim.built[-2:]:
        again = sim.replayed(built.seq)
        assert again.record == built.build.record and again.digest == built.build.digest
