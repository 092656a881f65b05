"""The typed event vocabulary: one class per kind, one codec, nothing on disk changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from nodwyn.errors import CorruptLogError
from nodwyn.values.events import (
    KINDS,
    LLM_REQ,
    PAYLOADS,
    Event,
    LlmReq,
    ToolResult,
    UserMsg,
    decode,
)

FIXTURES = Path(__file__).resolve().parent / "data" / "fixture_logs"
LOGS = sorted(FIXTURES.rglob("sessions/*/log.jsonl"))


def test_every_kind_has_one_class() -> None:
    assert set(PAYLOADS) == KINDS
    assert all(kind == cls.KIND for kind, cls in PAYLOADS.items())


@pytest.mark.parametrize("log_file", LOGS, ids=lambda p: p.parents[2].name + "-" + p.parent.name[-6:])
def test_every_fixture_event_decodes_and_encodes_back_byte_for_byte(log_file: Path) -> None:
    lines = log_file.read_bytes().splitlines()
    assert lines
    for line in lines:
        raw = orjson.loads(line)
        payload = decode(
            Event(seq=raw["seq"], t=raw["t"], kind=raw["kind"], ctx=raw["ctx"], data=raw["data"])
        )
        assert raw["kind"] == type(payload).KIND
        assert _sorted(payload.to_data()) == _sorted(raw["data"]), f"seq {raw['seq']}"


def _sorted(value: object) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


@pytest.mark.parametrize("log_file", LOGS, ids=lambda p: p.parents[2].name + "-" + p.parent.name[-6:])
def test_a_request_written_from_its_typed_value_has_the_bytes_an_earlier_release_wrote(
    log_file: Path,
) -> None:
    """The recorder writes ``LlmReq.to_data()``: its fields come out in the order the dict an
    earlier release wrote had them, so the log line's bytes are unchanged (not only its meaning)."""
    requests = 0
    for line in log_file.read_bytes().splitlines():
        raw = orjson.loads(line)
        if raw["kind"] == LLM_REQ and "start" in raw["data"]:
            requests += 1
            assert orjson.dumps(LlmReq.from_data(raw["data"]).to_data()) == orjson.dumps(raw["data"])
    assert requests > 0


def test_fixture_logs_are_all_found() -> None:
    assert len(LOGS) >= 20


def test_fields_read_typed() -> None:
    req = LlmReq.from_data(
        {
            "model": "m",
            "origin": {"model": "m", "server": None, "url": None, "credential": None},
            "digest": "sha256:" + "0" * 64,
            "elided": [3, 4],
            "estimate": 10,
            "trim": True,
            "start": {"seq": 2, "keep": [1]},
            "later_field": {"x": 1},
        }
    )
    assert req.elided == (3, 4) and req.trim and req.start is not None and req.start.keep == (1,)
    assert req.extra == {"later_field": {"x": 1}}  # a field a later release adds is kept
    assert req.to_data()["later_field"] == {"x": 1}
    msg = UserMsg.from_data(
        {
            "text": "hi",
            "images": [
                {"digest": "sha256:ab", "media_type": "image/png", "width": 2, "height": 3, "host": None}
            ],
        }
    )
    assert msg.images is not None and msg.images[0].shown_name == "sha256:ab"
    assert msg.to_data()["images"][0]["host"] is None  # recorded null stays null
    res = ToolResult.from_data(
        {"call_id": "c", "name": "fs-read", "text": "t", "error": False, "range": None}
    )
    assert res.range is None and res.to_data()["range"] is None


@pytest.mark.parametrize(
    ("kind", "data", "match"),
    [
        ("user.msg", {}, r"user.msg at seq 7: missing field 'text'"),
        (
            "user.msg",
            {"text": "x", "images": [{"digest": "d", "media_type": "m", "width": 0, "height": 1}]},
            r"images\[0\]: width and height must be positive",
        ),
        (
            "llm.req",
            {
                "model": "m",
                "origin": {"model": "m"},
                "elided": [],
                "estimate": 1,
                "trim": False,
                "start": {"seq": "1", "keep": []},
            },
            r"llm.req at seq 7.start.seq: expected int, got str",
        ),
        (
            "tool.result",
            {"call_id": "c", "name": "n", "text": "t", "error": 1},
            r"tool.result at seq 7.error",
        ),
        ("ctx.open", {"id": "x", "kind": "sub", "lasting": "yes"}, r"ctx.open at seq 7.lasting"),
        ("summary.revoke", {"summary": True}, r"summary: expected an integer, got a boolean"),
    ],
)
def test_malformed_fields_are_named(kind: str, data: dict[str, Any], match: str) -> None:
    with pytest.raises(CorruptLogError, match=match):
        decode(Event(seq=7, t="t", kind=kind, ctx="main", data=data))
