"""An export of a log holding a payload that does not decode: named in Markdown, no span guessed."""

from __future__ import annotations

from nodwyn.export.markdown import session_markdown
from nodwyn.export.otel import spans
from nodwyn.testing import SessionBuilder, recipe
from nodwyn.values.events import Event


def test_a_damaged_payload_is_named_not_guessed_at() -> None:
    s = SessionBuilder(recipe=recipe())  # in memory: the damage is added below, not written
    s.turn("hello", [], "hi")
    good = list(s.events)
    broken = [
        Event(seq=len(good) + 1, t=good[-1].t, kind="user.msg", ctx="main", data={"text": 7}),
        Event(seq=len(good) + 2, t=good[-1].t, kind="llm.resp", ctx="main", data={"req": 3, "response": [1]}),
    ]
    md = list(session_markdown([*good, *broken], "s1"))
    assert f"*Event #{len(good) + 1} (user.msg) does not decode; `nodwyn replay` shows it as recorded.*" in md
    assert f"*Event #{len(good) + 2} (llm.resp) does not decode; `nodwyn replay` shows it as recorded.*" in md
    assert "> 7" not in md  # a field of the wrong type is not shown as if it were the message
    names = [sp.name for sp in spans([*good, *broken], "s1")]
    assert names == [sp.name for sp in spans(good, "s1")]  # the damaged reply answers nothing
