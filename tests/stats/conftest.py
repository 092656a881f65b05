"""Helpers to construct session events for the stats tests."""

from __future__ import annotations

from typing import Any

from nodwyn.values.codec import recipe_to_json, response_to_json
from nodwyn.values.events import Event
from nodwyn.values.recipe import Recipe, WindowLimits
from nodwyn.values.request import Response, Usage


def recipe(version: int = 19) -> dict[str, Any]:
    limits = WindowLimits(
        high_water=60000, low_water=30000, max_result_tokens=3000, output_reserve=8000, ceiling=90000
    )
    return recipe_to_json(
        Recipe(version=version, system="be brief", tools=(), limits=limits, context_size=100000)
    )


class Session:
    """Builds an event list with consecutive seqs."""

    def __init__(self, version: int = 19) -> None:
        self.events: list[Event] = []
        self.add("session.start", {"recipe": recipe(version), "model": "m1"})

    def add(self, kind: str, data: dict[str, Any], ctx: str = "main") -> int:
        seq = len(self.events) + 1
        self.events.append(
            Event(seq=seq, t=f"2026-11-29T16:00:{seq % 60:02d}Z", kind=kind, ctx=ctx, data=data)
        )
        return seq

    def user(self, text: str = "do it") -> int:
        return self.add("user.msg", {"text": text})

    def req(self, model: str = "m1", ctx: str = "main", **record: Any) -> int:
        data: dict[str, Any] = {
            "model": model,
            "origin": {"model": model, "server": None, "url": None, "credential": None},
            "digest": "sha256:" + "0" * 64,
            "elided": [],
            "estimate": 100,
            "trim": False,
        }
        data.update(record)
        return self.add("llm.req", data, ctx)

    def resp(self, req: int, ctx: str = "main", text: str = "ok", **usage: int | None) -> int:
        response = response_to_json(Response(text=text, usage=Usage(**usage)))
        return self.add("llm.resp", {"req": req, "response": response}, ctx)

    def call(self, model: str = "m1", ctx: str = "main", **usage: int | None) -> int:
        """One request and its reply; returns the request's seq."""
        seq = self.req(model, ctx)
        self.resp(seq, ctx, **usage)
        return seq
