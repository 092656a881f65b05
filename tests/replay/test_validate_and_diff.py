"""The event checks replay applies, and how a difference between two requests is located."""

from __future__ import annotations

from typing import Any

import pytest

from nodwyn.errors import CorruptLogError
from nodwyn.replay.diff import describe, first_byte, first_path
from nodwyn.replay.validate import check_event
from nodwyn.values.canonical import canonical_bytes
from nodwyn.values.events import KINDS, PAYLOADS, Event


def test_every_kind_has_a_check() -> None:
    assert set(PAYLOADS) == KINDS


def _ev(kind: str, data: dict[str, Any], seq: int = 5) -> Event:
    return Event(seq=seq, t="t", kind=kind, ctx="main", data=data)


@pytest.mark.parametrize(
    ("kind", "data", "match"),
    [
        ("user.msg", {}, "missing field 'text'"),
        ("user.msg", {"text": "x", "images": [{"digest": "d"}]}, "media_type"),
        (
            "llm.req",
            {"model": "m", "origin": {"model": "m"}, "elided": [True], "estimate": 1, "trim": False},
            "elided",
        ),
        ("llm.req", {"model": "m", "origin": {"model": "m"}, "elided": [], "estimate": 1, "trim": 0}, "trim"),
        ("llm.resp", {"req": 9, "response": {}}, "not an earlier one"),
        ("llm.resp", {"req": 1, "response": {"calls": [{"id": 1}]}}, "calls"),
        (
            "tool.result",
            {"call_id": "c", "name": "n", "text": "t", "error": False, "range": {"start": 1}},
            "end",
        ),
        ("ctx.open", {"id": "x", "kind": "wide"}, "unknown context kind"),
        ("summary.add", {"first": 1, "last": 2, "text": "t"}, "source_digest"),
        ("note", {"text": 3}, "expected str"),
    ],
)
def test_bad_payloads_are_refused_with_their_place(kind: str, data: dict[str, Any], match: str) -> None:
    with pytest.raises(CorruptLogError, match=match) as exc:
        check_event(_ev(kind, data), None, "S", 1234)
    assert "session S seq 5 (byte offset 1234)" in str(exc.value)


def test_envelope_checks() -> None:
    with pytest.raises(CorruptLogError, match="expected seq 4"):
        check_event(_ev("note", {"text": "x"}), 4)
    with pytest.raises(CorruptLogError, match="unknown event kind"):
        check_event(_ev("note.other", {"text": "x"}), None)
    check_event(_ev("note", {"text": "x", "_redaction": {"n": 1}}), 5)  # extra fields are allowed


def test_legacy_shapes_pass_validation() -> None:
    """No digest, no recipe: not damage; exact replay refuses them as legacy instead."""
    check_event(
        _ev("llm.req", {"model": "m", "origin": {"model": "m"}, "elided": [], "estimate": 0, "trim": False}),
        None,
    )
    check_event(_ev("session.start", {"model": "m"}, seq=1), None)


def test_locating_a_difference() -> None:
    a = {
        "system": "s",
        "tools": [],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "abc"}]}],
    }
    b = {
        "system": "s",
        "tools": [],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "abd"}]}],
    }
    ca, cb = canonical_bytes(a), canonical_bytes(b)
    pos = first_byte(ca, cb)
    assert pos is not None and ca[:pos] == cb[:pos] and ca[pos] != cb[pos]
    assert first_path(a, b) == "$.messages[0].content[0].text"
    assert describe(ca, cb) == f"byte {pos} ($.messages[0].content[0].text)"
    assert first_byte(ca, ca) is None and first_byte(ca, ca + b"x") == len(ca)
    long_a, long_b = b"x" * 10_000 + b"a", b"x" * 10_000 + b"b"
    assert first_byte(long_a, long_b) == 10_000
    assert first_path({"m": [1, 2]}, {"m": [1, 2, 3]}) == "$.m[2]"
