"""The one recording path: what ``Recorder.request`` writes, and that the window sees every event."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from nodwyn.errors import TooLargeError
from nodwyn.log import Store
from nodwyn.record import Recorder, resume_session, resumed_events, start_session
from nodwyn.replay.exact import replay_request, verify_all
from nodwyn.values.canonical import digest
from nodwyn.values.codec import origin_from_json, request_to_json
from nodwyn.values.content import Origin
from nodwyn.values.events import LlmReq, LlmResp, ReqStart, UserMsg
from nodwyn.values.recipe import Recipe, WindowLimits
from nodwyn.values.request import Response
from nodwyn.window import TurnOptions

LIMITS = WindowLimits(high_water=900, low_water=450, max_result_tokens=80, output_reserve=200, ceiling=1400)
RECIPE = Recipe(version=19, system="Be careful.", tools=(), limits=LIMITS, context_size=4096)
ORIGIN = Origin(model="m-1", url="http://127.0.0.1:9/v1")


def test_a_request_records_digest_start_model_and_cache_ask_and_is_fed_back(tmp_path: Path) -> None:
    store = Store(tmp_path, fsync=False)
    with start_session(store, RECIPE, "entry", "/ws") as log:
        rec = Recorder(log)
        rec.feed(log.read())
        rec.append(UserMsg(text="hello"))
        build, req = rec.request(
            "main", ORIGIN, turn=TurnOptions(no_tools=True), model="entry", cache_ask="none"
        )
        assert req.kind == "llm.req" and req.seq == 3
        assert req.data["digest"] == build.digest == digest(request_to_json(build.request))
        assert req.data["model"] == "entry" and origin_from_json(req.data["origin"]) == ORIGIN
        assert req.data["start"] == {"seq": 1, "keep": []} and req.data["cache_ask"] == "none"
        written = replace(build.record, model="entry", start=ReqStart(seq=1, keep=()), cache_ask="none")
        assert LlmReq.from_data(req.data) == written and req.data == written.to_data()
        rec.append(LlmResp(req=req.seq, response=Response(text="hi")))
        rec.append(UserMsg(text="again"))
        later, _ = rec.request("main", ORIGIN)  # the window saw the request, its reply and the message
        assert len(later.request.messages) == 3
        assert replay_request(log, req.seq).digest == req.data["digest"]
    with store.open(log.id) as reader:
        assert all(v.error is None for v in verify_all(reader))


def test_the_model_name_defaults_to_the_origins_model(tmp_path: Path) -> None:
    with start_session(Store(tmp_path, fsync=False), RECIPE, "entry") as log:
        rec = Recorder(log)
        rec.feed(log.read())
        rec.append(UserMsg(text="hello"))
        _, req = rec.request("main", ORIGIN)
        assert req.data["model"] == "m-1" and "cache_ask" not in req.data


def test_a_resumed_recorder_continues_from_the_recorded_start_point(tmp_path: Path) -> None:
    store = Store(tmp_path, fsync=False)
    with start_session(store, RECIPE, "entry") as log:
        rec = Recorder(log)
        rec.feed(log.read())
        rec.append(UserMsg(text="one"))
        _, first = rec.request("main", ORIGIN)
        rec.append(LlmResp(req=first.seq, response=Response(text="ok")))
        sid = log.id
    with resume_session(store, sid, RECIPE, "entry") as log:
        rec = Recorder(log)
        start, events = resumed_events(log)
        rec.feed(events)
        rec.append(UserMsg(text="two"))
        build, req = rec.request("main", ORIGIN)
        assert start == 1 and len(build.request.messages) == 3
        assert replay_request(log, req.seq).digest == req.data["digest"]


def test_a_request_past_the_models_context_is_refused_and_nothing_is_recorded(tmp_path: Path) -> None:
    """ADR 0300: the estimate plus the reply cap must fit the context of the model it goes to."""
    with start_session(Store(tmp_path, fsync=False), RECIPE, "entry") as log:
        rec = Recorder(log)
        rec.feed(log.read())
        rec.append(UserMsg(text="x" * 3000))  # about 1,000 tokens
        build, _ = rec.request("main", ORIGIN, context=4096)
        need = build.record.estimate + 200
        last = log.last_seq
        with pytest.raises(TooLargeError, match=f"more than its {need - 1:,}-token context"):
            rec.request("main", ORIGIN, context=need - 1)
        assert log.last_seq == last  # no llm.req for the refused request
        rec.append(LlmResp.from_data({"req": last, "response": {"text": "ok"}}))
        rec.append(UserMsg(text="short"))
        rec.request("main", ORIGIN, context=need + 100)  # the window goes on as if nothing was built
    with Store(tmp_path, fsync=False).open(log.id) as reader:
        assert all(v.error is None for v in verify_all(reader))
