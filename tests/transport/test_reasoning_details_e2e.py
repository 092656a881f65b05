"""OpenRouter's reasoning_details end to end, as the agent loop runs a
session: a live ``Window`` builds each request from the session log, its ``llm.req`` is logged,
``HttpBackend`` encodes and sends it to the OpenRouter-like fake, and the reply is logged as an
``llm.resp`` (through the log's redaction) and fed back. The fake streams each reply's details in
fragments and refuses a signed or encrypted item it did not give, so a request it answers carried
the arrays as the client merged them; the assertions read the bytes the fake received.

The last rule, details that the log's redaction would change left out with a note, belongs to the
agent loop (where the reply is logged) and is not here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from nodwyn.fakes import FakeServer
from nodwyn.fakes.base import ReceivedRequest
from nodwyn.log import Store
from nodwyn.values.content import AssistantMessage
from nodwyn.values.events import ModelSwitch, ResultFold, UserMsg
from nodwyn.values.model import ModelEntry
from nodwyn.values.recipe import WindowLimits
from nodwyn.window import Build

from .convo import Run

TIGHT = WindowLimits(high_water=900, low_water=500, max_result_tokens=2000, output_reserve=50, ceiling=1200)
SIGNED = [
    {"type": "reasoning.text", "text": "I should read the file <first>.", "signature": None},
    {"type": "reasoning.encrypted", "format": "openai-responses-v1"},  # the fake mints its data
]


def item(n: int, *, call: bool = True, details: list[Any] | None = SIGNED) -> dict[str, Any]:
    out: dict[str, Any] = {"thinking": f"thought {n}", "text": f"step {n}"}
    if call:
        out["calls"] = [{"name": "fs-read", "id": f"call_{n}", "arguments": {"path": f"f{n}.py"}}]
    if details is not None:
        out["reasoning_details"] = details
    return out


def model(url: str, name: str = "model-a") -> ModelEntry:
    return ModelEntry(
        name=name, api="openai-chat", family="openrouter", model=name, context_size=200_000, base_url=url
    )


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "sessions")


@pytest.fixture
def run(store: Store) -> Iterator[Run]:
    with store.create() as log:
        yield Run(log)


def wire_assistants(got: ReceivedRequest) -> list[dict[str, Any]]:
    return [m for m in got.body["messages"] if m["role"] == "assistant"]


def check_rendered(b: Build, got: ReceivedRequest) -> None:
    """Each assistant message the window built went out with its block's array byte for byte and no
    reasoning text beside it, or, without a block, with its thinking as ``reasoning`` and no details."""
    built = [m for m in b.request.messages if isinstance(m, AssistantMessage)]
    sent = wire_assistants(got)
    assert len(built) == len(sent)
    for m, w in zip(built, sent, strict=True):
        if m.blocks:
            (block,) = m.blocks
            assert orjson.dumps(w["reasoning_details"]) == block.data.encode()
            assert got.raw.count(b'"reasoning_details":' + block.data.encode()) == 1
            assert "reasoning" not in w
        else:
            assert "reasoning_details" not in w
            assert w.get("reasoning") == (m.thinking or None)


def test_three_tool_rounds_and_a_second_turn_carry_each_reply_array_byte_for_byte(run: Run) -> None:
    script = [item(0), item(1), item(2), item(3, call=False), item(4, call=False), item(5, call=False)]
    with FakeServer(api="openai-chat", family="openrouter", script=script) as fake:
        a = model(fake.url)
        for _ in range(4):  # three tool rounds and the answer
            run.ask(a)
        run.append(UserMsg(text="And the tests?"))
        run.ask(a)  # the second turn
        run.append(UserMsg(text="Thanks."))
        run.ask(a)
        got = fake.requests
    assert not fake.remaining and len(got) == 6
    for b, r in zip(run.builds, got, strict=True):
        check_rendered(b, r)
    last = wire_assistants(got[-1])
    assert len(last) == 5
    for reply, sent in zip(run.replies, last, strict=False):
        (block,) = reply.blocks
        assert block.type == "reasoning_details" and block.origin == model(fake.url).origin
        assert orjson.dumps(sent["reasoning_details"]) == block.data.encode()
        text, encrypted = orjson.loads(block.data)
        assert text["text"] == "I should read the file <first>." and text["signature"]
        assert encrypted["type"] == "reasoning.encrypted" and encrypted["data"]
    assert b"<first>" in got[-1].raw  # < > & inside the array go out as the stream sent them


def test_a_request_no_reply_with_details_precedes_is_unchanged_to_the_byte(store: Store) -> None:
    def session(details: list[Any] | None, version: int) -> list[bytes]:
        script = [item(0, details=details), item(1, details=details), item(2, call=False, details=details)]
        with FakeServer(api="openai-chat", family="openrouter", script=script) as fake, store.create() as log:
            run = Run(log, version=version)
            for _ in range(3):
                run.ask(model(fake.url))
            return [r.raw for r in fake.requests]

    before_blocks = session(None, 17)  # window-v17 gave no block back
    assert session(None, 19) == before_blocks
    with_details = session(SIGNED, 19)
    assert with_details[0] == before_blocks[0]  # the first request: no reply precedes it
    assert all(b"reasoning_details" not in raw for raw in before_blocks)
    assert all(b'"reasoning_details":' in raw for raw in with_details[1:])


def test_trimming_elides_a_reply_with_its_details_and_later_replies_go_back_with_their_thinking(
    store: Store,
) -> None:
    rounds = 6
    script = [item(n) for n in range(rounds)] + [item(rounds, call=False)]
    with FakeServer(api="openai-chat", family="openrouter", script=script) as fake, store.create() as log:
        run, a = Run(log, TIGHT), model(fake.url)
        for _ in range(rounds + 1):
            run.ask(a, result="r" * 100)
        got = fake.requests
    for b, r in zip(run.builds, got, strict=True):
        check_rendered(b, r)
    trimmed = [b.record.trim for b in run.builds]
    ks = [i for i in range(len(trimmed) - 1) if trimmed[i] and not trimmed[i + 1]]
    assert ks, f"no trimmed request followed by an untrimmed one: {trimmed}"
    k = ks[0]
    b = run.builds[k]
    first_elided = min(b.record.elided)
    replies = [
        (seq, m) for seq, m in zip(b.seqs, b.request.messages, strict=True) if isinstance(m, AssistantMessage)
    ]
    sent = wire_assistants(got[k])
    assert any(seq in b.record.elided for seq, _ in replies)
    for (seq, m), w in zip(replies, sent, strict=True):
        if seq >= first_elided:  # elided with its reply, or made before an elision of an earlier entry
            assert "reasoning_details" not in w
        if seq > first_elided and seq not in b.record.elided:
            assert w["reasoning"] == m.thinking and m.thinking.startswith("thought ")
    # the reply made after the trim keeps its details while no later elision comes before it
    (block,) = run.replies[k].blocks
    assert orjson.dumps(wire_assistants(got[k + 1])[-1]["reasoning_details"]) == block.data.encode()


def test_a_fold_drops_the_details_of_replies_made_before_it_and_keeps_later_ones(run: Run) -> None:
    script = [item(0), item(1), item(2), item(3, call=False)]
    with FakeServer(api="openai-chat", family="openrouter", script=script) as fake:
        a = model(fake.url)
        run.ask(a)
        run.ask(a)
        run.append(ResultFold(target=run.results[0], text="[folded: f0.py was read]"))
        run.ask(a)
        run.ask(a)
        got = fake.requests
    for b, r in zip(run.builds, got, strict=True):
        check_rendered(b, r)
    assert b"[folded: f0.py was read]" in got[2].raw
    first, second = wire_assistants(got[2])
    # the reply before the folded result keeps its details; the one made after that result, before
    # the fold, goes back with its thinking only
    assert orjson.dumps(first["reasoning_details"]) == run.replies[0].blocks[0].data.encode()
    assert "reasoning_details" not in second and second["reasoning"] == "thought 1"
    last = wire_assistants(got[3])
    assert last[:2] == [first, second]
    assert orjson.dumps(last[2]["reasoning_details"]) == run.replies[2].blocks[0].data.encode()


def test_a_model_switch_sends_none_and_switching_back_sends_them_where_they_were(run: Run) -> None:
    with (
        FakeServer(api="openai-chat", family="openrouter", script=[item(0), item(1), item(3)]) as fa,
        FakeServer(api="openai-chat", family="openrouter", script=[item(2)]) as fb,
    ):
        a, b = model(fa.url), model(fb.url, "model-b")
        run.ask(a)
        run.ask(a)
        run.append(ModelSwitch(model=b.name))
        run.ask(b)
        run.append(ModelSwitch(model=a.name))
        run.ask(a)
        got_a, (got_b,) = fa.requests, fb.requests
    for build, r in zip(run.builds, [*got_a[:2], got_b, got_a[2]], strict=True):
        check_rendered(build, r)
    # b is sent none of a's details, and a's replies' thinking as before
    assert b"reasoning_details" not in got_b.raw
    assert [w["reasoning"] for w in wire_assistants(got_b)] == ["thought 0", "thought 1"]
    for reply in run.replies[:2]:
        assert reply.blocks[0].data.encode() not in got_b.raw
    # back on a: its replies' details where they were, b's reply with its thinking only
    back = wire_assistants(got_a[2])
    for reply, sent in zip(run.replies[:2], back, strict=False):
        assert orjson.dumps(sent["reasoning_details"]) == reply.blocks[0].data.encode()
    assert "reasoning_details" not in back[2] and back[2]["reasoning"] == "thought 2"
    assert back[0] == wire_assistants(got_a[1])[0]  # the first reply as a sent it before the switch
