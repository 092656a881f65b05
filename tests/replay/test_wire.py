"""Replay against what went over the wire: a session sent through the real transport to a fake
chat-completions server (127.0.0.1); each replayed request, encoded by the same dialect, is the body
the server received, byte for byte."""

from __future__ import annotations

from typing import Any

from nodwyn.dialects import dialect_for
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.replay.exact import replay_request
from nodwyn.testing import SessionBuilder, recipe
from nodwyn.transport.credentials import Credentials
from nodwyn.transport.http import HttpBackend
from nodwyn.values.events import LlmResp, ToolResult
from nodwyn.values.model import ModelEntry


def test_replayed_requests_encode_to_the_bodies_received(store: Store) -> None:
    script: list[dict[str, Any]] = [
        {
            "text": "",
            "thinking": "look first",
            "calls": [{"name": "fs-read", "id": "c1", "arguments": {"path": "a"}}],
        },
        {"text": "a holds alpha"},
        {"text": "", "calls": [{"name": "shell", "id": "c2", "arguments": {"cmd": "ls"}}]},
        {"text": "two files"},
    ]
    with FakeServer(api="openai-chat", script=script) as fake, HttpBackend(Credentials()) as backend:
        settings = ModelEntry(
            name="chat", api="openai-chat", model="fake-model", base_url=fake.url, context_size=32_000
        )
        s = SessionBuilder(store=store, recipe=recipe(19))
        key = "session-key"
        results = {"c1": "alpha\n", "c2": "a\nb\n"}
        for ask in ("read a", "list files"):
            s.user(ask)
            while True:
                req = s.request(origin=settings.origin)
                response = backend.send(s.builds[req.seq].request, settings, session_key=key)
                s.add(LlmResp(req=req.seq, response=response))
                for call in response.calls:
                    s.add(
                        ToolResult(call_id=call.id, name=call.name, text=results[call.id], error=False),
                    )
                if not response.calls:
                    break
        s.close()
        received = [r.raw for r in fake.requests if r.path.endswith("/chat/completions")]
    assert len(received) == len(s.sent) == 4
    dialect = dialect_for(settings)
    with store.open(s.id) as log:
        for seq, raw in zip(sorted(s.sent), received, strict=True):
            replayed = replay_request(log, seq)
            wire = dialect.encode(replayed.request, session_key=key, stream=True, images={})
            assert wire.body_bytes() == raw, (
                f"request seq {seq}: the replayed request encodes to another body"
            )
    assert b"alpha" in received[-1] and b"look first" in received[-1]
