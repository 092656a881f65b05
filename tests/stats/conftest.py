"""Hand-written session events for the stats tests of the aggregator and the diagnosis."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from nodwyn.stats.totals import Aggregator, Totals
from nodwyn.testing import recipe
from nodwyn.values.codec import recipe_to_json, response_to_json
from nodwyn.values.events import Event
from nodwyn.values.model import Prices
from nodwyn.values.recipe import WindowLimits
from nodwyn.values.request import Response, Usage

LIMITS = WindowLimits(
    high_water=60000, low_water=30000, max_result_tokens=3000, output_reserve=8000, ceiling=90000
)


class Session:
    """Hand-written events for the pure aggregator and diagnosis, which read only the log's
    fields: usage figures, seqs and causes, including events no window would build on (malformed
    usage, orphan replies, folds of anything). Its requests carry placeholder digests and never
    reach a disk; a session that must replay is a ``nodwyn.testing.SessionBuilder``."""

    def __init__(self, version: int = 19) -> None:
        self.events: list[Event] = []
        rec = recipe(version, system="be brief", tools=(), limits=LIMITS, context_size=100000)
        self.add("session.start", {"recipe": recipe_to_json(rec), "model": "m1"})

    def add(self, kind: str, data: dict[str, Any], ctx: str = "main", *, t: str | None = None) -> int:
        """Append an event; ``t`` its time (by default a second per seq)."""
        seq = len(self.events) + 1
        when = t or f"2026-11-29T16:00:{seq % 60:02d}Z"
        self.events.append(Event(seq=seq, t=when, kind=kind, ctx=ctx, data=data))
        return seq

    def user(self, text: str = "do it") -> int:
        return self.add("user.msg", {"text": text})

    def req(self, model: str = "m1", ctx: str = "main", *, t: str | None = None, **record: Any) -> int:
        data: dict[str, Any] = {
            "model": model,
            "origin": {"model": model, "server": None, "url": None, "credential": None},
            "digest": "sha256:" + "0" * 64,
            "elided": [],
            "estimate": 100,
            "trim": False,
        }
        data.update(record)
        return self.add("llm.req", data, ctx, t=t)

    def resp(
        self, req: int, ctx: str = "main", text: str = "ok", *, t: str | None = None, **usage: int | None
    ) -> int:
        response = response_to_json(Response(text=text, usage=Usage(**usage)))
        return self.add("llm.resp", {"req": req, "response": response}, ctx, t=t)

    def call(self, model: str = "m1", ctx: str = "main", **usage: int | None) -> int:
        """One request and its reply; returns the request's seq."""
        seq = self.req(model, ctx)
        self.resp(seq, ctx, "ok", t=None, **usage)
        return seq


def totals_of(events: Iterable[Event], prices: Mapping[str, Prices] | None = None) -> Totals:
    """A whole event sequence's totals, as the CLI and the console get them: an ``Aggregator``
    fed every event."""
    agg = Aggregator(prices)
    agg.feed_all(events)
    return agg.totals()
