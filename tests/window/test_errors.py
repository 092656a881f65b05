"""Bad input gets a clear error naming the event, and the window loses nothing."""

from __future__ import annotations

import pytest

from nodwyn.errors import CorruptLogError, UnknownRecipeError
from nodwyn.values.events import Event, decode
from nodwyn.window import Window

from .sessions import ORIGIN_A, recipe, started


def _ev(seq: int, kind: str, data: dict[str, object], ctx: str = "main") -> Event:
    return Event(seq=seq, t="t", kind=kind, ctx=ctx, data=data)


def test_an_unknown_recipe_version_is_refused() -> None:
    from nodwyn.values.codec import recipe_to_json

    data = recipe_to_json(recipe(19)) | {"version": "window-v13"}
    with pytest.raises(UnknownRecipeError, match="window-v13"):
        Window().feed(_ev(1, "session.start", {"recipe": data, "model": "m"}))


def test_a_build_needs_a_recipe() -> None:
    w = Window()
    w.feed(_ev(1, "user.msg", {"text": "hi"}))
    with pytest.raises(CorruptLogError, match="recipe first"):
        w.build(origin=ORIGIN_A)


def test_events_out_of_order_or_of_unknown_kind_are_refused() -> None:
    sim = started(19)
    with pytest.raises(CorruptLogError, match="feed events in seq order"):
        sim.window.feed(_ev(1, "user.msg", {"text": "again"}))
    with pytest.raises(CorruptLogError, match="unknown kind"):
        sim.window.feed(_ev(5, "user.shout", {}))


def test_malformed_payloads_name_the_seq_and_field() -> None:
    sim = started(19)
    with pytest.raises(CorruptLogError, match=r"user.msg at seq 2: missing field 'text'"):
        sim.window.feed(_ev(2, "user.msg", {}))
    with pytest.raises(CorruptLogError, match="result.fold at seq 3"):
        sim.window.feed(_ev(3, "result.fold", {"target": 1, "text": "x"}))
    with pytest.raises(CorruptLogError, match="llm.req at seq 3: missing field 'model'"):
        sim.window.feed(_ev(3, "llm.req", {"elided": [2]}))
    sim.user("hi")
    req = sim.request().record.to_data() | {"elided": "all"}
    with pytest.raises(CorruptLogError, match=r"llm.req at seq 4\.elided: expected list, got str"):
        sim.window.feed(_ev(4, "llm.req", req))


def test_a_refused_event_leaves_the_window_as_it_was() -> None:
    sim = started(19)
    sim.user("hi")
    before = sim.window.build(origin=ORIGIN_A)
    with pytest.raises(CorruptLogError):
        sim.window.feed(_ev(3, "tool.result", {"call_id": "x"}))
    assert sim.window.build(origin=ORIGIN_A).canonical == before.canonical


def test_a_refused_close_leaves_the_context_open() -> None:
    sim = started(19)
    sim.open_ctx("n1", "narrow")
    with pytest.raises(CorruptLogError, match=r"ctx.close at seq 3\.result: expected str, got int"):
        sim.window.feed(_ev(3, "ctx.close", {"id": "n1", "result": 7}))
    sim.window.feed(_ev(3, "user.msg", {"text": "still narrowed"}, ctx="n1"))
    assert sim.window.build("n1", origin=ORIGIN_A).request.messages


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("ctx.open", {"id": "s9", "kind": "sub", "parent_call": 7}),
        ("ctx.close", {"id": "n1", "result": None}),
        ("summary.add", {"first": True, "last": 2, "text": "s", "source_digest": "sha256:x"}),
        ("result.fold", {"target": 2.0, "text": "x"}),
        ("summary.revoke", {"summary": "4"}),
    ],
)
def test_handlers_refuse_what_the_codec_refuses_with_its_message(kind: str, data: dict[str, object]) -> None:
    """The window's handlers read the typed payloads of ``values.events``: a payload the codec
    refuses is refused by the window with the codec's own message (one place checks fields)."""
    sim = started(19)
    sim.open_ctx("n1", "narrow")
    event = _ev(len(sim.events) + 1, kind, data)
    with pytest.raises(CorruptLogError) as codec:
        decode(event)
    with pytest.raises(CorruptLogError) as window:
        sim.window.feed(event)
    assert str(window.value) == str(codec.value)
