"""Recording sessions: the events that make every request replayable.

``start_session`` and ``resume_session`` record the (redacted) recipe the next requests are built
under; ``send_request`` builds a request, records its digest in ``llm.req`` immediately before it
is handed to the provider layer, and feeds that event back to the window, so the log holds exactly
what ``nodwyn replay --window SEQ`` needs to rebuild it. The agent loop calls these; they never
talk to a provider themselves.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from nodwyn.errors import CorruptLogError
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
    log = store.create()
    try:
        log.append("session.start", data)
    except BaseException:
        log.close()
        store.discard(log.id)  # a start that recorded nothing leaves no empty session behind
        raise
    return log


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
    cache_ask: str | None = None,
) -> tuple[Build, Event]:
    """Build the next request of ``ctx``, record ``llm.req`` with its digest, feed it back.

    The digest is the build's: the SHA-256 of ``build.canonical``, the canonical bytes of
    ``codec.request_to_json(build.request)`` that the window assembles from its cached pieces while
    building, immediately before the caller hands ``build.request`` to the provider layer. Replay
    computes the canonical bytes of the rebuilt request afresh, so a drift of that incremental
    encoding shows as a refused replay rather than passing unseen. ``start`` records where a window
    that rebuilds this request may start reading the log (``window.Start``: the first seq and the
    earlier events it keeps), so replay of a late request seeks there instead of reading the whole
    log; it is a hint that the digest check makes safe (ADR 0037). ``cache_ask``: the cache ask the
    request goes with (``cache_control``, or ``"none"``) for an API that has one; recorded so that
    ``nodwyn cache`` can name a missing ask (ADR 0112). It is wire-only, never in the digest.
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
    if cache_ask is not None:
        data["cache_ask"] = cache_ask
    event = log.append("llm.req", data, ctx=ctx)
    window.feed(event)
    return build, event


# -- resuming from the start point ----------------------------------------------------------------

_WHOLE = frozenset({"summary.add", "summary.revoke"})  # a summary holds the session whole
_MODEL_KINDS = frozenset({"session.start", "session.resume", "model.switch"})


def _backwards(log: SessionLog) -> Iterator[Event]:
    """The log's events from the last to the first, each found through the index (a seek)."""
    for seq in range(log.last_seq, 0, -1):
        event = next(log.read(seq, seq), None)
        if event is None or event.seq != seq:
            raise CorruptLogError(f"session {log.id}: seq {seq} cannot be read back; resume needs it")
        yield event


def _recorded_start(event: Event) -> tuple[int, tuple[int, ...]] | None:
    """An llm.req's recorded start point, if it is well formed (else the caller reads everything)."""
    start = event.data.get("start")
    if not isinstance(start, dict):
        return None
    seq, keep = start.get("seq"), start.get("keep")
    if not isinstance(seq, int) or isinstance(seq, bool) or not 1 <= seq <= event.seq:
        return None
    if not isinstance(keep, list) or not all(isinstance(k, int) and not isinstance(k, bool) for k in keep):
        return None
    if any(not 1 <= k < seq for k in keep) or keep != sorted(set(keep)):
        return None
    return seq, tuple(keep)


def resume_point(log: SessionLog) -> tuple[int, tuple[int, ...]]:
    """Where a resumed session's window starts (seed, amendment 2026-10-15; ADR 0114): the start
    point its last ``llm.req`` recorded (``window.Start``: the first seq, and the earlier events
    it keeps), found by reading back from the end to that request through the log's index, so the
    cost is the events since the last request, not the log. Every later event comes after that
    start. A session without such a request, with a summary after it (a summary holds the window
    whole) or with a damaged record is read from seq 1."""
    for event in _backwards(log):
        if event.kind in _WHOLE:
            break
        if event.kind == "llm.req":
            return _recorded_start(event) or (1, ())
    return 1, ()


def resumed_events(log: SessionLog) -> tuple[int, Iterator[Event]]:
    """The start point's seq, and the events a resumed session holds: those the start point keeps,
    then every one from it."""
    start, keep = resume_point(log)

    def events() -> Iterator[Event]:
        for seq in keep:
            event = next(log.read(seq, seq), None)
            if event is None:
                raise CorruptLogError(f"session {log.id}: seq {seq}, which the start point keeps, is missing")
            yield event
        yield from log.read(start)

    return start, events()


def last_model(log: SessionLog) -> str | None:
    """The model entry the session's next request goes to, read back from the end: the last
    session event or model switch, or else the entry the last request went to."""
    for event in _backwards(log):
        if event.kind in _MODEL_KINDS or event.kind == "llm.req":
            model = event.data.get("model")
            return model if isinstance(model, str) else None
    return None
