"""A session as one JSON document: every event as the log holds it, with the session's figures.

The events are the log's own (already redacted when they were written), in seq order, so a
program reads one document instead of a JSON Lines file and an index; ``totals`` and
``requests`` are ``nodwyn stats --json``'s, so the figures agree with the console's. Attachments
(images) stay referenced by digest.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from nodwyn.stats import Aggregator, row_json, totals_json
from nodwyn.values.events import Event

FORMAT = "nodwyn.session"
VERSION = 1


def session_document(
    events: Iterable[Event],
    session: str,
    agg: Aggregator,
    *,
    nodwyn_version: str,
) -> dict[str, Any]:
    """``agg`` is fed here while the events are collected (one pass over the log)."""
    items: list[dict[str, Any]] = []
    for ev in events:
        agg.feed(ev)
        items.append({"seq": ev.seq, "t": ev.t, "kind": ev.kind, "ctx": ev.ctx, "data": ev.data})
    return {
        "format": FORMAT,
        "version": VERSION,
        "nodwyn": nodwyn_version,
        "session": session,
        "started": items[0]["t"] if items else None,
        "ended": items[-1]["t"] if items else None,
        "totals": totals_json(agg.totals()),
        "requests": [row_json(r) for r in agg.rows],
        "events": items,
    }
