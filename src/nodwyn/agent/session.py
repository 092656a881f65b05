"""Recording sessions: the events that make every request replayable.

``start_session`` and ``resume_session`` record the (redacted) recipe the next requests are built
under; ``send_request`` builds a request, records its digest in ``llm.req`` immediately before it
is handed to the provider layer, and feeds that event back to the window, so the log holds exactly
what ``nodwyn replay --window SEQ`` needs to rebuild it. The agent loop calls these; they never
talk to a provider themselves.
"""

from __future__ import annotations

from collections.abc import Mapping

from nodwyn.log import SessionLog, Store
from nodwyn.values import codec
from nodwyn.values.content import Origin
from nodwyn.values.events import Event
from nodwyn.values.recipe import Recipe, policy_for
from nodwyn.window import Build, TurnOptions, Window


def start_session(store: Store, recipe: Recipe, model: str, workspace: str | None = None) -> SessionLog:
    """A new session, locked for writing, whose first event records ``recipe``."""
    policy_for(recipe.version)  # refuses an unknown version before anything is written
    data: dict[str, object] = {"recipe": codec.recipe_to_json(recipe), "model": model}
    if workspace is not None:
        data["workspace"] = workspace
    return _first(store.create(), "session.start", data)


def resume_session(store: Store, session_id: str, recipe: Recipe, model: str) -> SessionLog:
    """Open ``session_id`` for writing and record the recipe its next requests are built under.

    Earlier requests keep replaying under the recipe recorded before them. The caller rebuilds its
    window from the log's events (the new recipe's rules apply from the next request on).
    """
    policy_for(recipe.version)
    data: dict[str, object] = {"recipe": codec.recipe_to_json(recipe), "model": model}
    return _first(store.open(session_id, write=True), "session.resume", data)


def _first(log: SessionLog, kind: str, data: dict[str, object]) -> SessionLog:
    """``log`` after appending ``kind``; closed (its lock released) if the append fails."""
    try:
        log.append(kind, data)
    except BaseException:
        log.close()
        raise
    return log


def send_request(
    log: SessionLog,
    window: Window,
    ctx: str,
    origin: Origin,
    turn: TurnOptions | None = None,
    withheld: Mapping[str, str] | None = None,
    model_name: str = "",
) -> tuple[Build, Event]:
    """Build the next request of ``ctx``, record ``llm.req`` with its digest, feed it back.

    The digest is the build's: the SHA-256 of ``build.canonical``, the canonical bytes of
    ``codec.request_to_json(build.request)`` that the window assembles from its cached pieces while
    building, immediately before the caller hands ``build.request`` to the provider layer. Replay
    computes the canonical bytes of the rebuilt request afresh, so a drift of that incremental
    encoding shows as a refused replay rather than passing unseen. ``start`` records where a window
    that rebuilds this request may start reading the log (``window.Start``: the first seq and the
    earlier events it keeps), so replay of a late request seeks there instead of reading the whole
    log; it is a hint that the digest check makes safe (ADR 0037).
    """
    build = window.build(ctx, origin=origin, turn=turn or TurnOptions(), withheld=dict(withheld or {}))
    start = window.start
    data = {
        "model": model_name or origin.model,
        "origin": codec.origin_to_json(origin),
        "digest": build.digest,
        **build.record,
        "start": {"seq": start.seq, "keep": list(start.keep)},
    }
    event = log.append("llm.req", data, ctx=ctx)
    window.feed(event)
    return build, event
