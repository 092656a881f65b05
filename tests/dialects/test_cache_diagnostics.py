"""The providers' cache diagnosis on the wire (ADR 0312): asked only with the entry's setting and an
earlier reply to name, read back from the reply as the provider said it."""

from __future__ import annotations

import orjson
import pytest

from nodwyn.dialects import dialect_for
from nodwyn.values.request import CacheReport, Request

from .cases import entry, user

HI = Request(system="s", tools=(), messages=(user("hi"),), max_output=64)


@pytest.mark.parametrize("api", ["anthropic", "responses"])
def test_the_ask_goes_only_with_the_setting_and_an_earlier_reply(api: str) -> None:
    on, off = entry(api=api, cache_diagnostics=True), entry(api=api)
    field = "diagnostics" if api == "anthropic" else "prompt_cache_options"
    asked = dialect_for(on).encode(HI, session_key=None, diagnose_against="earlier_1")
    assert asked.body is not None
    inner = "previous_message_id" if api == "anthropic" else "comparison_response_id"
    assert asked.body[field] == {inner: "earlier_1"}
    if api == "anthropic":
        assert "cache-diagnosis-2026-04-07" in asked.headers["anthropic-beta"].split(",")
    for settings, against in ((on, None), (off, "earlier_1")):
        wire = dialect_for(settings).encode(HI, session_key=None, diagnose_against=against)
        assert wire.body is not None and field not in wire.body
        assert "cache-diagnosis" not in wire.headers.get("anthropic-beta", "")


def _anthropic_body(diagnostics: object) -> bytes:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 5, "output_tokens": 1},
        "diagnostics": diagnostics,
    }
    return orjson.dumps(body)


@pytest.mark.parametrize(
    ("said", "report"),
    [
        (None, None),
        ({"cache_miss_reason": None}, CacheReport(reason="pending")),
        (
            {"cache_miss_reason": {"type": "tools_changed", "cache_missed_input_tokens": 900}},
            CacheReport(reason="tools_changed", missed_tokens=900),
        ),
        ({"cache_miss_reason": {"type": "unavailable"}}, CacheReport(reason="unavailable")),
    ],
)
def test_anthropic_diagnostics_are_read_as_sent(said: object, report: CacheReport | None) -> None:
    on = entry(api="anthropic", cache_diagnostics=True)
    r = dialect_for(on).decode_body(_anthropic_body(said), on.origin)
    assert r.id == "msg_1" and r.cache_report == report
    off = entry(api="anthropic")
    r = dialect_for(off).decode_body(_anthropic_body(said), off.origin)
    assert r.id is None and r.cache_report is None  # without the setting nothing is kept


@pytest.mark.parametrize(
    ("said", "report"),
    [
        ({"type": "cache_hit"}, CacheReport()),
        (
            {"type": "cache_miss", "reason": "input_changed", "cache_missed_tokens": 1200},
            CacheReport(reason="input_changed", missed_tokens=1200),
        ),
        ({"type": "comparison_response_not_found"}, CacheReport(reason="comparison_response_not_found")),
    ],
)
def test_responses_diagnostics_are_read_as_sent(said: object, report: CacheReport) -> None:
    on = entry(api="responses", cache_diagnostics=True)
    body = {"id": "resp_1", "status": "completed", "output": [], "prompt_cache_diagnostics": said}
    r = dialect_for(on).decode_body(orjson.dumps(body), on.origin)
    assert r.id == "resp_1" and r.cache_report == report
