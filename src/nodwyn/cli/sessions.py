"""``nodwyn sessions`` (list the sessions) and ``nodwyn log SESSION`` (print a session's events)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click
import orjson

from nodwyn.cli.common import ROOT, SESSION, model_prices, resolved, store_for
from nodwyn.cli.screen import hold_configured, json_safe, redacted, shown
from nodwyn.errors import NodwynError, NotFoundError
from nodwyn.log import SessionInfo, Store, encode_event
from nodwyn.stats import Overview, overview, percent
from nodwyn.values.events import (
    SESSION_RESUME,
    SESSION_START,
    TOOL_RESULT,
    Event,
    SessionResume,
    SessionStart,
    ToolResult,
    decoded,
)
from nodwyn.values.model import Prices

_DATA_WIDTH = 160


def _when(t: str | None) -> str:
    return "-" if t is None else t[:19].replace("T", " ")


def _info_json(info: SessionInfo, view: Overview | None) -> bytes:
    doc: dict[str, Any] = dataclasses.asdict(info)  # id, start, last, events, size, torn_bytes, error
    if view is not None:
        doc.update(
            first_message=view.first_message,
            model=view.model,
            requests=view.figures.requests,
            cache_share=view.figures.cached_share,
            cost_usd=view.figures.cost,
        )
    return orjson.dumps(doc)


def _overview(store: Store, sid: str, prices: dict[str, Prices], query: str | None) -> Overview | None:
    try:
        with store.open(sid) as session_log:
            # matched on the redacted text: no query can tell a held value by what it finds
            return overview(session_log.read(1), prices, query=query, clean=redacted)
    except NodwynError:
        return None  # the info row says why it cannot be read


def _line(text: str | None, width: int) -> str:
    if not text:
        return "-"
    flat = shown(" ".join(text.split()), newlines=False)  # redacted before the cut
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@click.command()
@click.option("--json", "as_json", is_flag=True, help="one JSON object per session, one per line")
@click.option("-q", "--query", default=None, help="only sessions whose messages or replies hold TEXT")
@ROOT
def sessions(as_json: bool, query: str | None, root: Path | None) -> None:
    """List sessions, oldest first: id, start, model, requests, cache share, cost, first message."""
    store = store_for(root)
    hold_configured()  # an old session may hold a value that has become a credential since
    infos = store.list()
    prices = model_prices()
    rows = [(info, _overview(store, info.id, prices, query)) for info in infos]
    if query is not None:
        rows = [(info, view) for info, view in rows if view is not None and view.matched]
    if as_json:
        for info, view in rows:
            click.echo(json_safe(_info_json(info, view).decode()))
        return
    if not rows:
        click.echo(f"no sessions under {store.sessions}" + (f" match {query!r}" if query else ""))
        return
    click.echo(
        f"{'SESSION':<25}  {'START':<16}  {'MODEL':<12}  {'REQS':>5}  {'CACHE':>5}  {'COST':>9}  "
        "FIRST MESSAGE"
    )
    for info, view in rows:
        note = f"  unreadable: {info.error}" if info.error else ""
        if info.torn_bytes and not info.error:
            note = f"  ({info.torn_bytes} bytes after the last whole event)"
        if view is None:
            click.echo(f"{info.id:<25}  {_when(info.start)[:16]:<16}{shown(note)}")
            continue
        f = view.figures
        cost = "-" if not f.requests else ("unknown" if f.cost is None else f"${f.cost:.4f}")
        share = "-" if f.cached_share is None else percent(f.cached_share)
        click.echo(
            f"{info.id:<25}  {_when(info.start)[:16]:<16}  {_line(view.model, 12):<12}  {f.requests:>5}  "
            f"{share:>5}  {cost:>9}  {_line(view.first_message, 60)}{shown(note)}"
        )


def _event_text(event: Event) -> str:
    data = redacted(orjson.dumps(event.data).decode())  # before the cut: half a key is still a key
    if len(data) > _DATA_WIDTH:
        data = data[: _DATA_WIDTH - 1] + "…"
    return f"{event.seq:>7}  {event.t}  {event.ctx:<8}  {event.kind:<14}  {_sandbox_tag(event)}{data}"


def _sandbox_tag(event: Event) -> str:
    """``[sandbox workspace-write] `` before a shell result or a session event that records one
    (the data after it may be cut)."""
    p = decoded(event, TOOL_RESULT, SESSION_START, SESSION_RESUME)
    mode = p.sandbox if isinstance(p, ToolResult | SessionStart | SessionResume) else None
    return "" if mode is None else f"[sandbox {mode}] "


@click.command()
@SESSION
@click.option("--from", "first", type=click.IntRange(min=1), default=1, show_default=True, help="first seq")
@click.option("--to", "last", type=click.IntRange(min=1), default=None, help="last seq (default: the last)")
@click.option("--json", "as_json", is_flag=True, help="print each event as its JSON line")
@ROOT
def log(session: str, first: int, last: int | None, as_json: bool, root: Path | None) -> None:
    """Print the events of SESSION (an id, a unique prefix of one, or latest), by seq range."""
    store, sid = resolved(root, session)
    if last is not None and last < first:
        raise click.UsageError(f"--to {last} is before --from {first}")
    hold_configured()
    with store.open(sid) as session_log:
        count = session_log.last_seq
        if first > count and first > 1:
            raise NotFoundError(f"session {sid} has no seq {first} (its last seq is {count})")
        for event in session_log.read(first, last):
            if as_json:
                click.echo(json_safe(encode_event(event).decode()), nl=False)
            else:
                click.echo(shown(_event_text(event)))
        torn = session_log.torn_bytes
        if torn:
            click.echo(
                f"nodwyn: session {sid}: {torn} bytes after the last whole event "
                f"(seq {session_log.last_seq}) are not an event: a torn write, or one in progress; "
                "the next writer cuts a torn one",
                err=True,
            )
