"""agent.session: what starting, resuming and sending record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from nodwyn.errors import LockedError, UnknownRecipeError
from nodwyn.log import Store
from nodwyn.record import resume_session, start_session
from nodwyn.testing import SessionBuilder, recipe
from nodwyn.values import codec
from nodwyn.values.canonical import digest
from nodwyn.values.events import LlmReq, ReqStart


def test_start_and_resume_record_the_recipe(store: Store) -> None:
    rec = recipe(17, keep_alive="10m", task_header="# Ask", plan_header="# Plan")
    log = start_session(store, rec, "local", "/ws")
    sid = log.id
    log.close()
    newer = replace(rec, version=19, keep_alive="1h")
    log = resume_session(store, sid, newer, "remote")
    log.close()
    with store.open(sid) as reader:
        start, resume = list(reader.read())
    assert start.kind == "session.start" and start.data == {
        "recipe": codec.recipe_to_json(rec),
        "model": "local",
        "workspace": "/ws",
    }
    assert resume.kind == "session.resume" and resume.data == {
        "recipe": codec.recipe_to_json(newer),
        "model": "remote",
    }
    assert codec.recipe_from_json(resume.data["recipe"]) == newer


def test_an_unknown_version_writes_nothing(store: Store) -> None:
    with pytest.raises(UnknownRecipeError):
        start_session(store, recipe(13), "m")
    assert store.ids() == []


def test_a_live_session_cannot_be_resumed_twice(store: Store) -> None:
    s = SessionBuilder(store=store, recipe=recipe())
    with pytest.raises(LockedError):
        resume_session(store, s.id, recipe(), "test")
    s.close()


def test_the_recorder_records_the_digest_of_what_it_built(store: Store) -> None:
    s = SessionBuilder(store=store, recipe=recipe())
    s.user("hello")
    req = s.request()
    b = s.builds[req.seq]
    assert req.data["digest"] == digest(codec.request_to_json(b.request)) == b.digest
    assert LlmReq.from_data(req.data) == replace(b.record, model="test", start=ReqStart(seq=1, keep=()))
    assert req.data["model"] == "test" and codec.origin_from_json(req.data["origin"]).model == "test-model"
    assert req.data["start"] == {"seq": 1, "keep": []}
    s.close()


def test_the_recipe_is_recorded_redacted_and_requests_use_what_was_recorded(
    session: Callable[..., SessionBuilder], store: Store
) -> None:
    key = "sk-ant-api03-" + "Qw7" * 12
    s = session(recipe(system=f"You are a coding agent. Deploy with {key} when asked."))
    s.turn("hello", [], "hi")
    with store.open(s.id) as log:
        start = next(log.read(1, 1))
    assert key not in start.data["recipe"]["system"]
    assert "[redacted:anthropic-key]" in start.data["recipe"]["system"]
    assert start.data["_redaction"]["replaced"] == {"anthropic-key": 1}
    for sent in s.sent.values():  # what the provider layer got: the recorded, redacted recipe
        assert key.encode() not in sent and b"[redacted:anthropic-key]" in sent
