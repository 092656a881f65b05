"""nodwyn replay SESSION: the conversation as a person reads it, for any log."""

from __future__ import annotations

from collections.abc import Callable

import orjson
import pytest

from nodwyn.log import Store
from nodwyn.replay.transcript import render_event, transcript_lines
from nodwyn.testing import ORIGIN, SessionBuilder, recipe
from nodwyn.values.content import ThinkingBlock
from nodwyn.values.events import IMPORT_VIEW, LLM_SEEN, Event, GatePlan, ResultFold
from nodwyn.values.recipe import DEFAULT_VERSION

from .invoke import run
from .logfile import Line, rewrite

Make = Callable[..., SessionBuilder]


def test_a_session_reads_as_a_conversation(
    session: Make, store: Store, capfd: pytest.CaptureFixture[str]
) -> None:
    s = session()
    s.user("Fix the bug in parse.py")
    req = s.request()
    block = ThinkingBlock(type="thinking", origin=ORIGIN, data="sig", text="hmm", position=0)
    _, calls = s.reply(
        req,
        "Let me look.",
        thinking="The bug is probably\nin the loop.",
        calls=[("fs-read", '{"path":"parse.py"}')],
        blocks=[block],
    )
    res = s.result(calls[0], "def parse():\n    pass\n", rng={"start": 1, "end": 2, "total": 2})
    s.add(GatePlan(text="1. read\n2. fix"))
    s.add(ResultFold(target=res.seq, text="[parse.py read]"))
    s.reply(s.request(), "Fixed.")
    s.close()
    code, out, err = run(store, capfd, "replay", s.id)
    assert code == 0 and err == ""
    expected_bits = [
        "#1 session started with model test",
        f"recipe window-v{DEFAULT_VERSION}",
        "#2 person:",
        "    Fix the bug in parse.py",
        f"#{req.seq} request to test",
        "thinking: The bug is probably",
        "              in the loop.",
        "reasoning blocks: thinking",
        "text: Let me look.",
        'call fs-read [call_1]: {"path":"parse.py"}',
        f"#{res.seq} result of fs-read [call_1] lines 1-2 of 2",
        "plan:",
        f"fold of result #{res.seq}:",
        "text: Fixed.",
    ]
    for bit in expected_bits:
        assert bit in out, bit
    assert out.index("#2 person:") < out.index("plan:") < out.index("text: Fixed.")
    code, out, _ = run(store, capfd, "replay", s.id, "--json")
    rows = [orjson.loads(line) for line in out.splitlines()]
    assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
    assert rows[1]["text"].startswith("#2 person:")


def test_logs_exact_replay_refuses_still_read(store: Store, capfd: pytest.CaptureFixture[str]) -> None:
    s = SessionBuilder(store=store, recipe=recipe())  # not the fixture: this log is damaged on purpose
    s.turn("hello", [], "hi")
    s.close()

    def legacy(lines: list[Line]) -> list[Line]:
        lines[0]["data"]["recipe"]["version"] = "window-v13"
        for line in lines:
            line["data"].pop("digest", None)
        return lines

    rewrite(store, s.id, legacy)
    code, out, _ = run(store, capfd, "replay", s.id)
    assert code == 0
    assert "window-v13" in out and "no digest recorded (legacy request" in out and "hello" in out
    code, _, _ = run(store, capfd, "replay", s.id, "--all")
    assert code == 8


def test_damaged_payloads_render_without_crashing() -> None:
    odd = [
        Event(seq=1, t="t", kind="session.start", ctx="main", data={"model": 3}),
        Event(seq=2, t="t", kind="user.msg", ctx="main", data={"text": None, "images": "x"}),
        Event(seq=3, t="t", kind="llm.resp", ctx="side", data={"response": [1, 2]}),
        Event(seq=4, t="t", kind="llm.req", ctx="main", data={"elided": 5, "trim": True}),
        Event(seq=5, t="t", kind="what.is.this", ctx="main", data={"a": 1}),
    ]
    lines = list(transcript_lines(odd))
    # each damaged payload: the codec's reason naming the field, then the fields as recorded
    assert lines[:2] == [
        "#1 ? the payload does not decode: session.start at seq 1.model: expected str, got int",
        "    as recorded: {'model': 3}",
    ]
    assert "#2 ? the payload does not decode: user.msg at seq 2.text: expected str, got NoneType" in lines
    assert render_event(odd[2]) == [
        "#3 [side] ? the payload does not decode: llm.resp at seq 3: missing field 'req'",
        "    as recorded: {'response': [1, 2]}",
    ]
    assert lines[-1].startswith("#5 ? unknown event kind 'what.is.this'")
    forged = Event(seq=6, t="t", kind="note", ctx="x\n#7 person:", data={"text": "hi"})
    assert render_event(forged)[0] == "#6 ['x\\n#7 person:'] note:"  # a context id no log writes, quoted


def test_a_damaged_log_reads_past_the_damage(store: Store, capfd: pytest.CaptureFixture[str]) -> None:
    s = SessionBuilder(store=store, recipe=recipe())  # damaged on purpose below
    s.turn("first question", [], "first answer")
    s.turn("second question", [], "second answer")
    s.close()
    path = store.sessions / s.id / "log.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    offset = sum(len(line) for line in lines[:2])
    lines[2] = b"{not an event}\n"
    path.write_bytes(b"".join(lines) + b'{"seq":99,"t":"20')
    (store.sessions / s.id / "index.bin").unlink()
    code, out, err = run(store, capfd, "replay", s.id)
    assert code == 5  # shown whole, and the exit code says the log is damaged
    assert f"!! damaged line at byte {offset} (15 bytes)" in out
    assert "first question" in out and "second question" in out and "second answer" in out
    assert "!! torn tail at byte" in out
    assert "1 damaged line(s)" in err
    code, out, _ = run(store, capfd, "replay", s.id, "--json")
    rows = [orjson.loads(line) for line in out.splitlines()]
    assert [r["offset"] for r in rows if r.get("damaged") and not r["torn"]] == [offset]
    assert rows[-1]["torn"] is True and "text: second answer" in rows[-2]["text"]


def test_an_imported_sessions_requests_read_as_observed() -> None:
    seen = {"model": "claude", "messages": [[2, 5], 9], "why": ["condensation"]}
    view = {"message": {"role": "user", "content": "summary so far"}, "why": "condensation", "of": [3, 4]}
    lines = list(
        transcript_lines(
            [
                Event(seq=9, t="t", kind=IMPORT_VIEW, ctx="main", data=view),
                Event(seq=10, t="t", kind=LLM_SEEN, ctx="main", data=seen),
            ]
        )
    )
    assert lines == [
        "#9 message the imported agent sent (condensation) in place of #3, #4:",
        '    {"role": "user", "content": "summary so far"}',
        "#10 observed request to claude",
        "    held #2..#5, #9",
        "    since the previous request: condensation",
        "    ? not built by nodwyn (an imported session): exact replay does not claim it",
    ]
