"""Malformed events get a NodwynError naming them, never another exception, and change nothing."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodwyn.errors import NodwynError
from nodwyn.values.events import KINDS, Event

from .sessions import ORIGIN_A, batch, started

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 50), st.text(max_size=8), st.floats(allow_nan=False)
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
FIELDS = [
    "text",
    "images",
    "response",
    "call_id",
    "name",
    "error",
    "range",
    "target",
    "first",
    "last",
    "source_digest",
    "summary",
    "id",
    "kind",
    "system",
    "offered_tools",
    "parent_call",
    "lasting",
    "result",
    "recipe",
    "elided",
    "origin",
    "no_tools",
    "withheld_images",
    "headroom",
]
payloads = st.dictionaries(st.sampled_from(FIELDS), values, max_size=6)


@settings(
    max_examples=int(os.environ.get("WINDOW_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(kind=st.sampled_from(sorted(KINDS)), data=payloads, ctx=st.sampled_from(["main", "n1", "s1", "zz"]))
def test_any_payload_is_taken_or_refused_cleanly(kind: str, data: dict[str, Any], ctx: str) -> None:
    sim = started(19)
    sim.open_ctx("n1", "narrow")
    sim.user("ask", "n1")
    batch(sim, [("a", "out")], ctx="n1")
    before = sim.window.build("n1", origin=ORIGIN_A)
    event = Event(seq=len(sim.events) + 1, t="t", kind=kind, ctx=ctx, data=data)
    try:
        sim.window.feed(event)
    except NodwynError as exc:
        assert str(exc)  # a message saying what and where
        assert f"seq {event.seq}" in str(exc) or "recipe" in str(exc) or "window-v" in str(exc)
        assert sim.window.build("n1", origin=ORIGIN_A).canonical == before.canonical
        return
    # taken: building still gives a request or a NodwynError (e.g. the event ended the context)
    with contextlib.suppress(NodwynError):
        sim.window.build("n1", origin=ORIGIN_A)
