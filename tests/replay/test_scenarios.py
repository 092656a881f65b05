"""Replay's canonical bytes equal the bytes the provider layer was given, scenario by scenario.

Each session is recorded through the real log and window (``scripted.SessionBuilder``); the ``session``
fixture then replays every request of it (``verify_all`` and ``replay_request``) and compares
with what ``send_request`` built. The tests here also check that each scenario really did what it
is named for, so a replay that passes is a replay of that behaviour.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from nodwyn.log import Store
from nodwyn.replay.exact import replay_request
from nodwyn.replay.summaries import add_summary, revoke_summary
from nodwyn.testing import ORIGIN, TOOLS, SessionBuilder, recipe
from nodwyn.values.content import AssistantMessage, Message, ThinkingBlock, ToolMessage
from nodwyn.values.events import CtxClose, CtxOpen, GatePlan, ResultFold, WithheldImage
from nodwyn.values.request import ToolSpec
from nodwyn.window import TurnOptions

from .conftest import OTHER_ORIGIN

Make = Callable[..., SessionBuilder]

GREP = ToolSpec(
    name="grep",
    description="Search files.",
    parameters={"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]},
)


def _json(b: bytes) -> dict[str, Any]:
    body: dict[str, Any] = orjson.loads(b)
    return body


def test_resume_with_changed_settings_and_catalog(session: Make, store: Store) -> None:
    s = session(recipe(19, keep_alive="5m"))
    s.turn("read the readme", [[("fs-read", '{"path":"README.md"}', "# nodwyn\n")]], "It is a readme.")
    before = max(s.sent)
    s.resume(recipe(19, tools=(*TOOLS, GREP), output_reserve=4_096, keep_alive="30m", high_water=50_000))
    s.turn("now grep for TODO", [[("grep", '{"pattern":"TODO"}', "none")]], "No TODOs.")
    after = max(s.sent)
    old, new = _json(s.sent[before]), _json(s.sent[after])
    assert [t["name"] for t in old["tools"]] == ["fs-read", "shell"]
    assert [t["name"] for t in new["tools"]] == ["fs-read", "shell", "grep"]
    assert (old["max_output"], new["max_output"]) == (8_192, 4_096)
    s.close()
    with store.open(s.id) as log:
        assert [t.name for t in replay_request(log, before).request.tools] == ["fs-read", "shell"]
        assert replay_request(log, after).request.max_output == 4_096


def test_capped_tool_output(session: Make) -> None:
    s = session(recipe(19, max_result_tokens=40))
    big = "".join(f"line {i}: " + "x" * 40 + "\n" for i in range(200))
    s.turn("run it", [[("shell", '{"cmd":"seq"}', big)]], "ok")
    msgs = _json(s.sent[max(s.sent)])["messages"]
    tool = next(m for m in msgs if m["role"] == "tool")
    assert len(tool["text"]) < len(big) / 10 and "omitted" in tool["text"]


def test_sticky_elision(session: Make) -> None:
    s = session(
        recipe(19, high_water=900, low_water=400, ceiling=1_200, max_result_tokens=200, output_reserve=256)
    )
    for i in range(8):
        s.turn(f"task {i}", [[("shell", f'{{"cmd":"step {i}"}}', f"output {i} " + "y" * 500)]], f"done {i}")
    with_elision = [seq for seq, b in s.builds.items() if b.record.elided]
    assert with_elision, "the scenario never trimmed"
    last = s.sent[max(s.sent)].decode()
    assert "[elided seq=" in last
    # sticky: a result, once elided, is never shown again
    assert s.log is not None
    results = {e.seq: e.data["text"] for e in s.log.read() if e.kind == "tool.result"}
    for trim in with_elision:
        for gone in s.builds[trim].record.elided:
            if gone in results:
                for seq in sorted(s.sent):
                    if seq > trim:
                        assert results[gone][:60].encode() not in s.sent[seq]


def test_redacted_text(session: Make) -> None:
    s = session()
    key = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
    s.turn(f"use the key {key} to call the API", [[("shell", '{"cmd":"env"}', f"OPENAI_API_KEY={key}\n")]])
    for sent in s.sent.values():
        assert key.encode() not in sent
    assert b"openai-key" in s.sent[max(s.sent)]


def test_summaries_added_and_revoked(session: Make, store: Store) -> None:
    s = session()
    s.turn("first task", [[("fs-read", '{"path":"a.py"}', "print('a')\n")]], "a prints a")
    s.turn("second task", [[("fs-read", '{"path":"b.py"}', "print('b')\n")]], "b prints b")
    s.turn("third task", [], "third done")
    s.close()
    with store.open(s.id, write=True) as log:
        events = list(log.read())
        users = [e.seq for e in events if e.kind == "user.msg"]
        summary = add_summary(log, users[0], users[1] - 1, "The person asked about a.py; it prints a.")
    s.resume(recipe())
    s.turn("fourth task", [], "fourth done")
    with_summary = s.sent[max(s.sent)].decode()
    assert "it prints a." in with_summary and "print('a')" not in with_summary
    s.close()
    with store.open(s.id, write=True) as log:
        revoke_summary(log, summary.seq)
    s.resume(recipe())
    s.turn("fifth task", [], "fifth done")
    revoked = s.sent[max(s.sent)].decode()
    assert "it prints a." not in revoked and "print('a')" in revoked


def test_v15_to_v16_resume_drops_results_of_elided_calls(session: Make, store: Store) -> None:
    small: dict[str, Any] = {
        "high_water": 700,
        "low_water": 300,
        "ceiling": 1_000,
        "max_result_tokens": 150,
        "output_reserve": 256,
    }
    s = session(recipe(15, **small))
    for i in range(6):
        s.turn(f"job {i}", [[("shell", f'{{"cmd":"job {i}"}}', f"result {i} " + "z" * 300)]], f"job {i} ok")
    last15 = max(s.sent)
    req15 = s.builds[last15].request

    def orphans(msgs: tuple[Message, ...]) -> set[str]:
        called = {c.id for m in msgs if isinstance(m, AssistantMessage) for c in m.calls}
        return {m.call_id for m in msgs if isinstance(m, ToolMessage)} - called

    assert orphans(req15.messages), "v15 should keep results of calls it elided (the bug v16 fixed)"
    s.resume(recipe(16, **small))
    s.user("job 6")
    after = s.request()
    req16 = s.builds[after.seq].request
    assert not orphans(req16.messages), "v16 drops the results of calls an earlier recipe elided"
    s.close()
    with store.open(s.id) as log:
        assert replay_request(log, last15).recipe_version == 15
        assert replay_request(log, after.seq).recipe_version == 16


def test_folds(session: Make) -> None:
    s = session()
    s.user("read it")
    req = s.request()
    _, calls = s.reply(req, calls=[("fs-read", '{"path":"big.txt"}')])
    res = s.result(calls[0], "the whole stale content " * 20)
    s.request()
    s.add(ResultFold(target=res.seq, text="[folded: big.txt was read; stale]"))
    last = s.request()
    assert b"stale content" not in s.sent[last.seq] and b"[folded: big.txt" in s.sent[last.seq]


def test_blocks(session: Make) -> None:
    s = session()
    s.user("think hard")
    req = s.request()
    block = ThinkingBlock(type="thinking", origin=ORIGIN, data="sig-abc123", text="I think.", position=0)
    _, calls = s.reply(req, thinking="I think.", calls=[("shell", '{"cmd":"ls"}')], blocks=[block])
    s.result(calls[0], "a b c")
    same = s.request(origin=ORIGIN)
    other = s.request(origin=OTHER_ORIGIN)
    assert b"sig-abc123" in s.sent[same.seq]
    assert b"sig-abc123" not in s.sent[other.seq]


def test_images_withheld(session: Make) -> None:
    s = session()
    img: dict[str, Any] = {
        "digest": "sha256:" + "ab" * 32,
        "media_type": "image/png",
        "width": 1024,
        "height": 768,
        "name": "shot.png",
    }
    img2: dict[str, Any] = {
        "digest": "sha256:" + "cd" * 32,
        "media_type": "image/jpeg",
        "width": 300,
        "height": 200,
        "name": "b.jpg",
    }
    s.user("what is in these pictures?", images=[img, img2])
    req = s.request(withheld={img["digest"]: "the model takes no images"})
    assert s.builds[req.seq].record.withheld_images == (
        WithheldImage(digest=img["digest"], reason="the model takes no images"),
    )
    assert b"the model takes no images" in s.sent[req.seq] and img2["digest"].encode() in s.sent[req.seq]


def test_turn_options_and_contexts(session: Make) -> None:
    s = session()
    s.user("plan first")
    plan = s.request(turn=TurnOptions(no_tools=True))
    s.reply(plan, "1. read 2. fix")
    s.add(GatePlan(text="1. read\n2. fix"))
    req = s.request(turn=TurnOptions(offered_tools=("fs-read",)))
    _, calls = s.reply(req, calls=[("shell", '{"cmd":"agent"}')])
    s.add(CtxOpen(id="sub1", kind="sub", offered_tools=("fs-read",), parent_call=calls[0].id))
    s.user("sub task", ctx="sub1")
    sub = s.request(ctx="sub1")
    s.reply(sub, "sub answer")
    s.add(CtxClose(id="sub1"), ctx="main")
    s.result(calls[0], "sub answer")
    head = s.request(turn=TurnOptions(headroom=True))
    assert s.builds[plan.seq].record.no_tools is not None and _json(s.sent[plan.seq])["tools"] == []
    assert [t["name"] for t in _json(s.sent[req.seq])["tools"]] == ["fs-read"]
    assert s.builds[head.seq].record.headroom is True
    assert b"1. read" in s.sent[head.seq]


def test_compaction_moves_the_start(session: Make, store: Store) -> None:
    s = session()
    for i in range(3):
        s.turn(f"early {i}", [[("shell", f'{{"cmd":"e{i}"}}', f"early output {i}")]])
    s.add(CtxOpen(id="c1", kind="narrow", lasting=True, system="Continue from the handover."))
    s.user("handover: early work done", ctx="c1")
    s.turn("late task", [[("shell", '{"cmd":"late"}', "late output")]], ctx="c1")
    last = max(s.sent)
    with store.open(s.id) as log:
        start = next(log.read(last, last)).data["start"]
    assert start["seq"] > 10, start


def test_summaries_apply_from_a_window_v2_recipe(session: Make, store: Store) -> None:
    """A v1 session's summary shows only once the session is resumed under v2 or later."""
    s = session(recipe(1))
    s.turn("first task", [[("fs-read", '{"path":"a.py"}', "print('a')\n")]], "a prints a")
    s.turn("second task", [], "second done")
    s.turn("third task", [], "third done")
    s.close()
    with store.open(s.id, write=True) as log:
        users = [e.seq for e in log.read() if e.kind == "user.msg"]
        add_summary(log, users[0], users[1] - 1, "V2-SUMMARY")
    s.resume(recipe(1))
    s.turn("fourth task", [], "ok")
    assert b"V2-SUMMARY" not in s.sent[max(s.sent)]
    s.resume(recipe(2))
    s.turn("fifth task", [], "ok")
    assert b"V2-SUMMARY" in s.sent[max(s.sent)] and b"print('a')" not in s.sent[max(s.sent)]
