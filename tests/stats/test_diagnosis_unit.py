"""The diagnosis on requests built by hand (the fake-server sessions are in test_diagnosis_fakes)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from nodwyn.cli.stats import describe, duration
from nodwyn.log.session_log import format_time
from nodwyn.stats.diagnosis import IDLE_WORTH_SAYING, Diagnosis, diagnose_all
from nodwyn.stats.prefix import chunks, common_prefix, tokens_for
from nodwyn.stats.times import epoch_seconds, seconds_between
from nodwyn.stats.totals import Aggregator
from nodwyn.stats.views import diagnosis_json
from nodwyn.values.content import AssistantMessage, Message, TextPart, ToolMessage, UserMessage
from nodwyn.values.request import Request, ToolSpec

from .conftest import Session

TOOLS = (ToolSpec(name="read", description="read a file", parameters={"type": "object"}),)


def request(*messages: Message, system: str = "sys") -> Request:
    return Request(system=system, tools=TOOLS, messages=messages, max_output=100)


U = UserMessage(parts=(TextPart(text="fix the bug " * 50),))
A1 = AssistantMessage(text="reading", thinking="hmm")
T1 = ToolMessage(call_id="c1", name="read", text="file body " * 200)
A2 = AssistantMessage(text="done")


def test_common_prefix_follows_wire_order_not_canonical_key_order() -> None:
    a = chunks(request(U, A1))
    b = chunks(request(U, A1, T1))
    c = chunks(request(U, A1, system="other"))
    d = chunks(Request(system="sys", tools=TOOLS, messages=(U, A1), max_output=999))
    assert common_prefix(a, b).extends
    moved = common_prefix(a, c)
    assert not moved.extends and moved.first_difference == "system" and moved.chunks == 0
    assert common_prefix(a, d).extends  # max_output is not part of the prompt
    folded = chunks(request(U, A1, ToolMessage(call_id="c1", name="read", text="[folded]")))
    common = common_prefix(b, folded)
    assert common.first_difference == "message 2" and common.chunks == 4  # system, tool, 2 messages
    assert sum(len(p) for p in b.parts[:4]) < common.bytes < b.size
    assert tokens_for(common.bytes, folded.size, 1000) < 1000


def test_classifies_appended_moved_and_server_miss_with_the_matching_request() -> None:
    s = Session()
    s.user()
    r1 = s.call(prompt_tokens=2000, cached_tokens=0)
    r2 = s.call(prompt_tokens=3000, cached_tokens=1990)
    r3 = s.call(prompt_tokens=4000, cached_tokens=0)  # replica without our prefix
    r4 = s.call(prompt_tokens=5000, cached_tokens=1920)  # replica that served r1: multiple of 128
    fold = s.add("result.fold", {"target": 2, "text": "[folded]"})
    r5 = s.call(prompt_tokens=3000, cached_tokens=900)
    r6 = s.call(prompt_tokens=3100, cached_tokens=0)  # moved, nothing recorded
    agg = Aggregator()
    agg.feed_all(s.events)

    t2 = ToolMessage(call_id="c2", name="read", text="second " * 300)
    reqs = {
        r1: request(U),
        r2: request(U, A1, T1),
        r3: request(U, A1, T1, A1, t2),
        r4: request(U, A1, T1, A1, t2, A2, U),
        r5: request(U, A1, ToolMessage(call_id="c1", name="read", text="[folded]"), A1, t2, A2, U, A2, U),
        r6: request(U, system="changed"),
    }
    out = {d.seq: d for d in diagnose_all(agg.rows, {k: chunks(v) for k, v in reqs.items()})}

    assert out[r1].kind == "first"
    assert out[r2].kind == "appended" and out[r2].appended == 2 and out[r2].expected == 2000
    assert out[r2].shortfall is None
    assert out[r3].kind == "server miss" and out[r3].shortfall == 3000 and out[r3].matched is None
    assert out[r4].kind == "server miss" and out[r4].shortfall == 4000 - 1920
    assert out[r4].matched == r1
    assert "request 1" not in describe(out[r4]) or f"request {r1}" in describe(out[r4])
    assert out[r5].kind == "moved" and [(c.kind, c.seq) for c in out[r5].causes] == [("fold", fold)]
    assert out[r5].first_difference == "message 2"
    assert "fold at seq" in describe(out[r5])
    assert out[r6].kind == "moved" and out[r6].causes == () and "no cause recorded" in describe(out[r6])
    assert out[r6].first_difference == "system"


def test_unrebuilt_requests_are_unverified_not_guessed() -> None:
    s = Session()
    a = s.call(prompt_tokens=100, cached_tokens=0)
    b = s.call(prompt_tokens=200, cached_tokens=0)
    agg = Aggregator()
    agg.feed_all(s.events)
    out = diagnose_all(agg.rows, {a: "digest mismatch at seq 2", b: chunks(request(U))})
    assert [d.kind for d in out] == ["unverified", "unverified"]
    assert (out[0].unrebuilt, out[0].error) == (a, "digest mismatch at seq 2")
    assert (out[1].unrebuilt, out[1].error) == (a, "digest mismatch at seq 2")  # b's predecessor
    assert "digest mismatch" in describe(out[0]) and f"predecessor {a}" in describe(out[1])


def test_a_miss_after_a_resume_says_the_cache_may_have_expired() -> None:
    s = Session()
    s.user()
    a = s.call(prompt_tokens=4000, cached_tokens=0)
    resume = s.add("session.resume", {"recipe": s.events[0].data["recipe"], "model": "m1"})
    b = s.call(prompt_tokens=5000, cached_tokens=0)
    agg = Aggregator()
    agg.feed_all(s.events)
    out = {d.seq: d for d in diagnose_all(agg.rows, {a: chunks(request(U)), b: chunks(request(U, A1, T1))})}
    assert out[b].kind == "server miss" and out[b].shortfall == 4000
    assert f"after the resume at seq {resume}" in describe(out[b])


def _idle_session(
    ask: str | None, req_t: str, resp_t: str | None = "2026-11-29T16:00:10.250000Z"
) -> dict[str, Diagnosis]:
    """Two requests whose second is a server miss: the first answered at ``resp_t`` (no reply
    logged when None), the second sent at ``req_t``; both recorded with the cache ask ``ask``."""
    s = Session()
    s.user()
    ask_field = {"cache_ask": ask} if ask is not None else {}
    a = s.req(t="2026-11-29T16:00:05Z", **ask_field)
    if resp_t is not None:
        s.resp(a, t=resp_t, prompt_tokens=4000, cached_tokens=0)
    b = s.req(t=req_t, **ask_field)
    s.resp(b, t=req_t, prompt_tokens=5000, cached_tokens=0)
    agg = Aggregator()
    agg.feed_all(s.events)
    out = diagnose_all(agg.rows, {a: chunks(request(U)), b: chunks(request(U, A1, T1))})
    return {"first": out[0], "miss": out[1]}


def test_a_server_miss_says_how_long_the_cache_sat_idle_past_the_lifetime_asked_for() -> None:
    d = _idle_session("ephemeral", "2026-11-29T16:06:22.250000Z")["miss"]
    assert d.kind == "server miss" and d.idle_seconds == 372.0
    assert (d.lifetime_seconds, d.past_lifetime) == (300, True)
    assert describe(d).endswith("; after 6 min 12 s idle, past the 5-minute lifetime asked for")
    assert diagnosis_json(d)["idle_seconds"] == 372.0


def test_an_hour_asked_for_is_not_past_after_six_minutes_but_the_idle_time_is_said() -> None:
    d = _idle_session("1h", "2026-11-29T16:06:22.250000Z")["miss"]
    assert (d.idle_seconds, d.lifetime_seconds, d.past_lifetime) == (372.0, 3600, False)
    assert describe(d).endswith("; after 6 min 12 s idle")
    late = _idle_session("1h", "2026-11-29T17:02:10.250000Z")["miss"]
    assert late.past_lifetime and describe(late).endswith(
        "after 1 h 2 min idle, past the 1-hour lifetime asked for"
    )


def test_without_an_ask_no_lifetime_is_assumed() -> None:
    for ask in (None, "none"):
        d = _idle_session(ask, "2026-11-29T16:06:22.250000Z")["miss"]
        assert d.idle_seconds == 372.0 and d.lifetime_seconds is None and not d.past_lifetime
    unrecorded = _idle_session(None, "2026-11-29T16:06:22.250000Z")["miss"]
    assert unrecorded.kind == "server miss"
    assert describe(unrecorded).endswith("; after 6 min 12 s idle")


def test_idle_under_the_threshold_is_known_but_not_worded() -> None:
    out = _idle_session("ephemeral", "2026-11-29T16:01:10Z")
    d = out["miss"]
    assert d.kind == "server miss" and d.idle_seconds == 59.75 and not d.past_lifetime
    assert "idle" not in describe(d)
    assert out["first"].idle_seconds is None  # no predecessor
    at = _idle_session("ephemeral", "2026-11-29T16:01:10.250000Z")["miss"]
    assert at.idle_seconds == IDLE_WORTH_SAYING and describe(at).endswith("; after 1 min idle")


def test_idle_is_unknown_without_the_predecessors_reply_or_with_a_clock_that_went_back() -> None:
    assert _idle_session("ephemeral", "2026-11-29T16:06:22Z", resp_t=None)["miss"].idle_seconds is None
    back = _idle_session("ephemeral", "2026-11-29T16:00:09Z")["miss"]
    assert back.idle_seconds is None and not back.past_lifetime and "idle" not in describe(back)
    assert seconds_between("not a time", "2026-11-29T16:00:09Z") is None
    assert seconds_between("2026-11-29T16:00:09", "2026-11-29T16:00:19") is None  # no zone: unknown


def test_durations_are_worded_in_whole_units() -> None:
    assert [duration(x) for x in (59.9, 60, 372.4, 3600, 3725)] == [
        "59 s",
        "1 min",
        "6 min 12 s",
        "1 h",
        "1 h 2 min",
    ]


def test_event_times_are_read_as_datetime_reads_them() -> None:
    rng = random.Random(5)
    for _ in range(2000):
        moment = datetime(1971, 1, 1, tzinfo=UTC) + timedelta(seconds=rng.uniform(0, 4e9))
        assert epoch_seconds(format_time(moment)) == pytest.approx(moment.timestamp(), abs=1e-5)
    for bad in ("2026-02-30T00:00:00Z", "2026-11-29 16:00:09Z", "2026-11-29T16:00:09+01:00", ""):
        assert epoch_seconds(bad) is None
