"""``nodwyn sessions`` (list the sessions) and ``nodwyn log SESSION`` (print a session's events)."""

from __future__ import annotations

from pathlib import Path

import click
import orjson

from nodwyn.cli.common import ROOT, store_for
from nodwyn.errors import NotFoundError
from nodwyn.log import SessionInfo
from nodwyn.log.jsonl import encode_event
from nodwyn.values.events import Event

_DATA_WIDTH = 160


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    size, unit = n / 1024, "KB"
    for bigger in ("MB", "GB"):
        if size < 1024:
            break
        size, unit = size / 1024, bigger
    return f"{size:.1f} {unit}"


def _when(t: str | None) -> str:
    return "-" if t is None else t[:19].replace("T", " ")


def _info_json(info: SessionInfo) -> bytes:
    return orjson.dumps(
        {
            "id": info.id,
            "start": info.start,
            "last": info.last,
            "events": info.events,
            "size": info.size,
            "torn_bytes": info.torn_bytes,
            "error": info.error,
        }
    )


@click.command()
@click.option("--json", "as_json", is_flag=True, help="one JSON object per session, one per line")
@ROOT
def sessions(as_json: bool, root: Path | None) -> None:
    """List sessions, oldest first: id, start, last event, events, size."""
    store = store_for(root)
    infos = store.list()
    if as_json:
        for info in infos:
            click.echo(_info_json(info))
        return
    if not infos:
        click.echo(f"no sessions under {store.sessions}")
        return
    click.echo(f"{'SESSION':<25}  {'START':<19}  {'LAST EVENT':<19}  {'EVENTS':>8}  {'SIZE':>9}")
    for info in infos:
        note = f"  unreadable: {info.error}" if info.error else ""
        if info.torn_bytes and not info.error:
            note = f"  ({info.torn_bytes} bytes after the last whole event)"
        click.echo(
            f"{info.id:<25}  {_when(info.start):<19}  {_when(info.last):<19}  "
            f"{info.events:>8}  {_size(info.size):>9}{note}"
        )


def _event_text(event: Event) -> str:
    data = orjson.dumps(event.data).decode()
    if len(data) > _DATA_WIDTH:
        data = data[: _DATA_WIDTH - 1] + "…"
    return f"{event.seq:>7}  {event.t}  {event.ctx:<8}  {event.kind:<14}  {data}"


@click.command()
@click.argument("session")
@click.option("--from", "first", type=click.IntRange(min=1), default=1, show_default=True, help="first seq")
@click.option("--to", "last", type=click.IntRange(min=1), default=None, help="last seq (default: the last)")
@click.option("--json", "as_json", is_flag=True, help="print each event as its JSON line")
@ROOT
def log(session: str, first: int, last: int | None, as_json: bool, root: Path | None) -> None:
    """Print the events of SESSION (an id, a unique prefix of one, or latest), by seq range."""
    store = store_for(root)
    sid = store.resolve(session)
    if last is not None and last < first:
        raise click.UsageError(f"--to {last} is before --from {first}")
    with store.open(sid) as session_log:
        count = session_log.last_seq
        if first > count and first > 1:
            raise NotFoundError(f"session {sid} has no seq {first} (its last seq is {count})")
        for event in session_log.read(first, last):
            if as_json:
                click.echo(encode_event(event), nl=False)
            else:
                click.echo(_event_text(event))
        torn = session_log.torn_bytes
        if torn:
            click.echo(
                f"nodwyn: session {sid}: {torn} bytes after the last whole event "
                f"(seq {session_log.last_seq}) are not an event: a torn write, or one in progress; "
                "the next writer cuts a torn one",
                err=True,
            )
