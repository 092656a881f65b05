"""nodwyn summary add/revoke/list: bounds, the lock, redaction, the source digest, the CLI."""

from __future__ import annotations

from collections.abc import Callable

import orjson
import pytest

from nodwyn.errors import ConfigError, LockedError, NotFoundError
from nodwyn.log import Store
from nodwyn.replay.summaries import add_summary, check_span, list_summaries, revoke_summary
from nodwyn.testing import SessionBuilder, recipe
from nodwyn.values.events import CtxClose, CtxOpen, Event
from nodwyn.window import source_digest

from .invoke import run

Make = Callable[..., SessionBuilder]


def _three_turns(make: Make) -> SessionBuilder:
    s = make()
    s.turn("first", [[("fs-read", '{"path":"a"}', "alpha\n")]], "a is alpha")
    s.turn(
        "second", [[("fs-read", '{"path":"b"}', "beta\n"), ("shell", '{"cmd":"ls"}', "a b\n")]], "b is beta"
    )
    s.turn("third", [], "done")
    s.close()
    return s


def _events(store: Store, sid: str) -> list[Event]:
    with store.open(sid) as log:
        return list(log.read())


def _users(events: list[Event]) -> list[int]:
    return [e.seq for e in events if e.kind == "user.msg"]


def test_add_records_the_redacted_span_digest(session: Make, store: Store) -> None:
    s = _three_turns(session)
    events = _events(store, s.id)
    u = _users(events)
    key = "sk-ant-api03-" + "Zx9" * 10
    with store.open(s.id, write=True) as log:
        ev = add_summary(log, u[0], u[1] - 1, f"Read a (alpha). Key was {key}.")
    span = [e for e in events if u[0] <= e.seq < u[1]]
    assert ev.kind == "summary.add" and ev.ctx == "main"
    assert ev.data["source_digest"] == source_digest(span)
    assert key not in ev.data["text"] and "anthropic-key" in orjson.dumps(ev.data).decode()
    with store.open(s.id) as log:
        (info,) = list_summaries(list(log.read()))
    assert (info.seq, info.first, info.last, info.status) == (ev.seq, u[0], u[1] - 1, "active")


@pytest.mark.parametrize(
    ("case", "error", "match"),
    [
        ("not_a_user_msg", ConfigError, "not a person's message"),
        ("mid_turn_end", ConfigError, "ends inside a turn"),
        ("open_request", ConfigError, "has no reply inside"),
        ("open_call", ConfigError, "has no result inside"),
        ("reversed", ConfigError, "are not a range"),
        ("beyond", NotFoundError, "has no event with that seq"),
        ("empty_text", ConfigError, "summary text is empty"),
    ],
)
def test_bounds_are_validated(
    session: Make, store: Store, case: str, error: type[Exception], match: str
) -> None:
    s = _three_turns(session)
    events = _events(store, s.id)
    u = _users(events)
    kinds = {e.seq: e.kind for e in events}
    req = next(q for q in range(u[1], u[2]) if kinds[q] == "llm.req")
    resp_with_calls = next(q for q in range(u[1], u[2]) if kinds[q] == "llm.resp")
    first, last, text = {
        "not_a_user_msg": (u[0] + 1, u[1] - 1, "x"),
        "mid_turn_end": (u[0], u[0] + 3, "x"),  # after the first result, before the answer
        "open_request": (u[1], req, "x"),
        "open_call": (u[1], resp_with_calls, "x"),
        "reversed": (u[1], u[0], "x"),
        "beyond": (u[0], 10_000, "x"),
        "empty_text": (u[0], u[1] - 1, "  \n"),
    }[case]
    with store.open(s.id, write=True) as log:
        before = log.last_seq
        with pytest.raises(error, match=match):
            add_summary(log, first, last, text)
        assert log.last_seq == before, "a refused summary appends nothing"


def test_span_must_stay_in_one_context(session: Make, store: Store) -> None:
    s = session()
    s.user("delegate")
    req = s.request()
    _, calls = s.reply(req, calls=[("shell", '{"cmd":"agent"}')])
    s.add(CtxOpen(id="sub1", kind="sub", parent_call=calls[0].id))
    s.user("sub task", ctx="sub1")
    sub = s.request(ctx="sub1")
    s.reply(sub, "sub answer")
    s.add(CtxClose(id="sub1"))
    s.result(calls[0], "sub answer")
    s.reply(s.request(), "delegated")
    s.turn("next", [], "ok")
    s.turn("last", [], "ok")
    s.close()
    u = _users(_events(store, s.id))
    with store.open(s.id, write=True) as log:
        # the whole first turn, with the sub-context opened and closed inside it: accepted
        ev = add_summary(log, u[0], u[2] - 1, "Delegated a sub task; it answered.")
        assert ev.ctx == "main"
        # a span from inside the sub-context into main: refused
        with pytest.raises(ConfigError, match="inside one context"):
            add_summary(log, u[1], u[2] - 1, "x")


def test_a_live_session_is_refused(session: Make, store: Store, capfd: pytest.CaptureFixture[str]) -> None:
    s = session()
    s.turn("one", [], "ok")
    s.turn("two", [], "ok")
    assert s.log is not None  # still open for writing: the live session holds the lock
    with pytest.raises(LockedError):
        store.open(s.id, write=True)
    text = store.root / "summary.md"
    text.write_text("turn one\n")
    u = _users(_events(store, s.id))
    code, out, err = run(
        store, capfd, "summary", "add", s.id, "--from", str(u[0]), "--to", str(u[1] - 1), str(text)
    )
    assert (code, out) == (4, "") and err.count("\n") == 1
    assert err.startswith(f"nodwyn: session {s.id} ") and "open for writing" in err
    assert "summary.add" not in {e.kind for e in _events(store, s.id)}


def test_revoke_and_list(session: Make, store: Store) -> None:
    s = _three_turns(session)
    u = _users(_events(store, s.id))
    with store.open(s.id, write=True) as log:
        a = add_summary(log, u[0], u[1] - 1, "turn one")
        b = add_summary(log, u[0], u[2] - 1, "turns one and two")
    with store.open(s.id) as log:
        assert [(i.seq, i.status, i.by) for i in list_summaries(list(log.read()))] == [
            (a.seq, "superseded", b.seq),
            (b.seq, "active", None),
        ]
    with store.open(s.id, write=True) as log:
        r = revoke_summary(log, b.seq)
        with pytest.raises(ConfigError, match="already revoked"):
            revoke_summary(log, b.seq)
        with pytest.raises(ConfigError, match="not a summary.add"):
            revoke_summary(log, u[0])
    with store.open(s.id) as log:  # a revoked newer summary still supersedes the older (ADR 0300)
        assert [(i.seq, i.status, i.by) for i in list_summaries(list(log.read()))] == [
            (a.seq, "superseded", b.seq),
            (b.seq, "revoked", r.seq),
        ]


def test_cli(session: Make, store: Store, capfd: pytest.CaptureFixture[str]) -> None:
    s = _three_turns(session)
    u = _users(_events(store, s.id))
    text = store.root / "summary.md"
    text.write_text("The person asked for a; it holds alpha.\n")
    code, out, err = run(
        store, capfd, "summary", "add", s.id, "--from", str(u[0]), "--to", str(u[1] - 1), str(text)
    )
    assert code == 0 and "added" in out, err
    seq = int(out.split()[2])
    code, out, _ = run(store, capfd, "summary", "list", s.id, "--json")
    (row,) = [orjson.loads(line) for line in out.splitlines()]
    assert (row["seq"], row["status"], row["first"]) == (seq, "active", u[0])
    code, out, _ = run(store, capfd, "summary", "revoke", s.id, str(seq))
    assert code == 0 and "revoked" in out
    code, out, _ = run(store, capfd, "summary", "list", s.id)
    assert "revoked by seq" in out
    code, _, err = run(
        store, capfd, "summary", "add", s.id, "--from", str(u[0] + 1), "--to", str(u[1] - 1), str(text)
    )
    assert code == 2 and len(err.strip().splitlines()) == 1
    bad = store.root / "bad.md"
    bad.write_bytes(b"\xff\xfe summary")
    code, _, err = run(
        store, capfd, "summary", "add", s.id, "--from", str(u[0]), "--to", str(u[1] - 1), str(bad)
    )
    assert code == 2 and "not UTF-8" in err


def test_summary_then_resume_replays(session: Make, store: Store) -> None:
    """A summary added after the fact never changes an earlier request; the resumed ones use it."""
    s = _three_turns(session)
    u = _users(_events(store, s.id))
    with store.open(s.id, write=True) as log:
        add_summary(log, u[0], u[1] - 1, "SUMMARY-OF-TURN-ONE")
    s.resume(recipe())
    s.turn("fourth", [], "ok")
    assert b"SUMMARY-OF-TURN-ONE" in s.sent[max(s.sent)]
    assert all(b"SUMMARY-OF-TURN-ONE" not in b for seq, b in s.sent.items() if seq < u[2])


def test_payloads_that_do_not_decode_are_not_read_as_summaries_or_replies() -> None:
    s = SessionBuilder(recipe=recipe())  # in memory: the damaged events are added below, never written
    s.turn("first", [], "one")
    s.turn("second", [], "two")
    events = s.events
    users = _users(events)
    span = [e for e in events if users[0] <= e.seq < users[1]]
    good = {
        "first": users[0],
        "last": users[1] - 1,
        "text": "the first turn",
        "source_digest": source_digest(span),
    }
    n = events[-1].seq
    extra = [
        Event(seq=n + 1, t="t", kind="summary.add", ctx="main", data=good),
        Event(seq=n + 2, t="t", kind="summary.add", ctx="main", data={**good, "first": "2"}),
        Event(seq=n + 3, t="t", kind="summary.revoke", ctx="main", data={"summary": str(n + 1)}),
    ]
    assert [(i.seq, i.status) for i in list_summaries([*events, *extra])] == [(n + 1, "active")]
    # a reply whose payload does not decode answers nothing: the span is refused as open
    reply = next(e for e in span if e.kind == "llm.resp")
    broken = Event(seq=reply.seq, t=reply.t, kind=reply.kind, ctx=reply.ctx, data={"req": reply.data["req"]})
    damaged = [broken if e.seq == reply.seq else e for e in events]
    with pytest.raises(ConfigError, match=r"has no reply inside"):
        check_span(damaged, users[0], users[1] - 1)
