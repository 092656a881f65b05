"""Events are written typed: ``append(UserMsg(text=...), ctx)``, the kind taken from the class,
the payload read back through the codec before the write (ADR 0340). What a reader would refuse is
refused at the append, and nothing is written; ``mypy --strict`` refuses a misspelled field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nodwyn.errors import CanonicalError
from nodwyn.log import SessionLog, Store
from nodwyn.record import Recorder, resumed_events, start_session
from nodwyn.testing import SessionBuilder, recipe
from nodwyn.values.events import (
    CtxOpen,
    ImageRef,
    LineRange,
    Note,
    Payload,
    ToolResult,
    UserMsg,
    decode,
    encode,
)


def _opened(tmp_path: Path) -> tuple[Store, SessionLog, Recorder, bytes]:
    store = Store(tmp_path)
    log = start_session(store, recipe(), "test-model")
    rec = Recorder(log)
    rec.feed(log.read())
    rec.append(UserMsg(text="hello"))
    return store, log, rec, (store.sessions / log.id / "log.jsonl").read_bytes()


def _bad(**fields: Any) -> Any:
    """A value built past the type checker, as untyped code could build it."""
    return fields


IMAGE = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("payload", "named"),
    [
        (UserMsg(text=_bad(t="hello")), "user.msg.text: expected str, got dict"),
        (
            ToolResult(
                call_id="c",
                name="fs-read",
                text="x",
                error=False,
                range=LineRange(**_bad(start="1", end=2, total=2)),
            ),
            "tool.result.range.start: expected int, got str",
        ),
        (
            UserMsg(text="look", images=(ImageRef(digest=IMAGE, media_type="image/png", width=0, height=1),)),
            "user.msg.images[0]: width and height must be positive",
        ),
        (CtxOpen(id="n-2", kind=_bad(k="wide")), "ctx.open.kind: expected str, got dict"),
    ],
)
def test_a_payload_the_reader_would_refuse_is_refused_before_anything_is_written(
    tmp_path: Path, payload: Payload, named: str
) -> None:
    store, log, rec, before = _opened(tmp_path)
    seq = log.last_seq
    with pytest.raises(CanonicalError, match="nothing was written") as refused:
        rec.append(payload)
    assert named in str(refused.value)
    assert (store.sessions / log.id / "log.jsonl").read_bytes() == before  # not a byte more
    assert log.last_seq == seq
    rec.append(Note(text="the session goes on"))  # neither the log nor the window was touched
    _, events = resumed_events(log)
    assert [e.kind for e in events][-2:] == ["user.msg", "note"]


def test_a_misspelled_field_is_refused_before_a_payload_exists() -> None:
    with pytest.raises(TypeError, match="txt"):
        UserMsg(**_bad(txt="hello"))


def test_what_a_payload_holds_is_written_whole() -> None:
    # an image's host given is recorded (it was dropped when a flag had to say it was given)
    ref = ImageRef(digest=IMAGE, media_type="image/png", width=2, height=3, host="api.example")
    assert encode(UserMsg(text="look", images=(ref,)))["images"][0]["host"] == "api.example"
    # and a range given, with no flag beside it
    rng = LineRange(start=1, end=2, total=2)
    assert encode(ToolResult(call_id="c", name="n", text="t", error=False, range=rng))["range"] == {
        "start": 1,
        "end": 2,
        "total": 2,
    }


def test_what_is_written_reads_back_as_the_value_appended(tmp_path: Path) -> None:
    s = SessionBuilder(recipe(), store=Store(tmp_path))
    written = [
        UserMsg(text="hi"),
        ToolResult(
            call_id="c1", name="fs-read", text="1 line", error=False, range=LineRange(start=1, end=1, total=9)
        ),
        CtxOpen(id="sub-9", kind="sub", offered_tools=("fs-read",), parent_call="c1"),
        Note(text="done"),
    ]
    events = [s.add(p) for p in written]
    assert [decode(e) for e in events] == written
    assert [e.kind for e in events] == ["user.msg", "tool.result", "ctx.open", "note"]


MISSPELLED = """
from nodwyn.record import Recorder
from nodwyn.values.events import UserMsg


def turn(rec: Recorder) -> None:
    rec.append(UserMsg(txt="hello"))
    rec.append("user.msg", {"text": "hello"})
"""


@pytest.mark.slow
def test_mypy_strict_refuses_a_misspelled_payload_and_an_untyped_append(tmp_path: Path) -> None:
    from mypy import api

    code = tmp_path / "typo.py"
    code.write_text(MISSPELLED)
    out, _, status = api.run(
        ["--strict", "--cache-dir", str(tmp_path / "cache"), "--config-file", "", str(code)]
    )
    assert status == 1
    assert 'Unexpected keyword argument "txt" for "UserMsg"' in out
    assert 'Argument 1 to "append" of "Recorder" has incompatible type "str"; expected "Payload"' in out
