"""The one recording path: a session log and the window folded from it, kept in step.

Every event goes to the log first and the event the log returns (redacted, seq assigned) is fed to
the window. A request is built by the window, its digest recorded in ``llm.req`` immediately
before the caller hands the request to a provider, and that event fed back, so the log holds
exactly what replay needs to rebuild it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Protocol

from nodwyn.errors import TooLargeError
from nodwyn.log import SessionLog, Store
from nodwyn.values.content import Origin
from nodwyn.values.events import MAIN_CTX, Event, Payload, ReqStart, SessionResume, SessionStart
from nodwyn.values.recipe import Recipe, policy_for
from nodwyn.window import Build, TurnOptions, Window, need


class EventLog(Protocol):
    """What a recorder writes to: ``nodwyn.log.SessionLog``, or an in-memory log in tests."""

    def append(self, payload: Payload, ctx: str = MAIN_CTX) -> Event: ...


class Recorder:
    """``log`` and ``window`` in step: ``append`` writes an event and feeds it back; ``request``
    builds, digests, records ``llm.req`` and feeds it back. ``window`` must already hold the
    log's earlier events (``feed`` them, or start from an empty log)."""

    __slots__ = ("log", "window")

    def __init__(self, log: EventLog, window: Window | None = None) -> None:
        self.log = log
        self.window = window if window is not None else Window()

    def feed(self, events: Iterable[Event]) -> None:
        """Fold events already in the log (a resumed session's) into the window."""
        self.window.feed_all(events)

    def append(self, payload: Payload, ctx: str = MAIN_CTX) -> Event:
        """``payload`` written as the next event of its kind (refused before anything is written
        if it does not read back), then fed to the window."""
        event = self.log.append(payload, ctx)
        self.window.feed(event)
        return event

    def request(
        self,
        ctx: str,
        origin: Origin,
        *,
        turn: TurnOptions | None = None,
        withheld: Mapping[str, str] | None = None,
        model: str = "",
        cache_ask: str | None = None,
        context: int | None = None,
    ) -> tuple[Build, Event]:
        """Build the next request of ``ctx``, record ``llm.req`` with its digest, feed it back.

        The digest is the SHA-256 of ``build.canonical``, the canonical bytes the window assembled
        while building; replay computes the bytes of the rebuilt request afresh, so a drift of that
        incremental encoding shows as a refused replay. ``start`` records where a window that
        rebuilds this request may start reading the log (``window.Start``), a hint the digest
        check makes safe (ADR 0037). ``model``: the model entry's name (the origin's model if
        empty). ``cache_ask``: the cache ask sent with the request for an API that has one
        (``cache_control`` or ``"none"``), recorded for ``nodwyn cache``; wire-only, never in the
        digest (ADR 0112). ``context``: the model's context in tokens; a build whose estimate and
        reply cap pass it is refused (``TooLargeError``) before anything is recorded, so it is
        never sent (ADR 0300).
        """
        build = self.window.build(
            ctx, origin=origin, turn=turn or TurnOptions(), withheld=dict(withheld or {})
        )
        if context is not None:
            refuse_oversized(build, model or origin.model, context)
        start = self.window.start
        record = replace(
            build.record,
            model=model or origin.model,
            start=ReqStart(seq=start.seq, keep=start.keep),
            cache_ask=cache_ask,
        )
        return build, self.append(record, ctx)


def refuse_oversized(build: Build, model: str, context: int) -> None:
    """Refuse a request that does not fit the model's context: its prompt and reply (ADR 0300)."""
    est, cap = build.record.estimate, build.record.max_output
    total = need(est, cap)
    if total > context:
        reply = f" and a {cap:,}-token reply cap" if cap else ""
        raise TooLargeError(
            f"the next request to model {model!r} is about {est:,} tokens{reply}, more than its "
            f"{context:,}-token context, and the window cannot trim it further (a person's message "
            "is never trimmed); nothing was sent: resume on a model with a larger context "
            "(-m NAME or /model NAME), or start a new session and name large input by its path so "
            "the agent reads it in ranges"
        )


def start_session(
    store: Store,
    recipe: Recipe,
    model: str,
    workspace: str | None = None,
    extra: Mapping[str, object] | None = None,
) -> SessionLog:
    """A new session, locked for writing, whose first event records ``recipe`` (and ``extra``'s
    fields, e.g. an imported session's source)."""
    policy_for(recipe.version)  # refuses an unknown version before anything is written
    start = SessionStart(recipe=recipe, model=model, workspace=workspace, extra=dict(extra or {}))
    log = store.create()
    try:
        log.append(start)
    except BaseException:
        log.close()
        store.discard(log.id)  # a start that recorded nothing leaves no empty session behind
        raise
    return log


def resume_session(
    store: Store,
    session_id: str,
    recipe: Recipe,
    model: str,
    check: Callable[[SessionLog], object] | None = None,
    extra: Mapping[str, object] | None = None,
) -> SessionLog:
    """Open ``session_id`` for writing and record the recipe its next requests are built under.

    Earlier requests keep replaying under the recipe recorded before them. The caller rebuilds its
    window from the log's events (``resumed_events``); the new recipe applies from the next request.
    ``check`` (the caller's rebuild) runs on the opened log first: a session it refuses is closed
    with nothing appended, so a resume that keeps failing does not add a ``session.resume`` a try.
    """
    policy_for(recipe.version)
    log = store.open(session_id, write=True)
    try:
        if check is not None:
            check(log)
        log.append(SessionResume(recipe=recipe, model=model, extra=dict(extra or {})))
    except BaseException:
        log.close()
        raise
    return log
