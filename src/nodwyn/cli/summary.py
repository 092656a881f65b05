"""``nodwyn summary add|revoke|list``: reviewed summaries on a closed session."""

from __future__ import annotations

from pathlib import Path

import click
import orjson

from nodwyn.cli.common import ROOT, SESSION, resolved
from nodwyn.errors import ConfigError
from nodwyn.replay import SummaryInfo, add_summary, list_summaries, revoke_summary


@click.group()
def summary() -> None:
    """Reviewed summaries of a closed session: add one over a span of turns, revoke it, list them.

    A resumed session's windows (recipe window-v2 and up) show an active summary in place of the
    older turns it covers; the latest two turns always stay whole.
    """


def _read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); save the summary as UTF-8") from None


@summary.command("add")
@SESSION
@click.option(
    "--from", "first", type=click.IntRange(min=1), required=True, help="seq of the span's first event"
)
@click.option("--to", "last", type=click.IntRange(min=1), required=True, help="seq of the span's last event")
@click.argument("file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@ROOT
def add(session: str, first: int, last: int, file: Path, root: Path | None) -> None:
    """Append the reviewed summary in FILE for the turns FROM..TO of SESSION (which must not be running)."""
    text = _read_text(file)
    store, sid = resolved(root, session)
    with store.open(sid, write=True) as log:
        ev = add_summary(log, first, last, text)
    click.echo(f"summary seq {ev.seq} added to {sid}: seq {first}..{last} in context {ev.ctx}")


@summary.command("revoke")
@SESSION
@click.argument("summary_seq", type=click.IntRange(min=1))
@ROOT
def revoke(session: str, summary_seq: int, root: Path | None) -> None:
    """Revoke the summary at SUMMARY_SEQ: later windows show its source again."""
    store, sid = resolved(root, session)
    with store.open(sid, write=True) as log:
        ev = revoke_summary(log, summary_seq)
    click.echo(f"summary seq {summary_seq} of {sid} revoked at seq {ev.seq}")


_JSON_KEYS = ("seq", "ctx", "first", "last", "status", "by", "source_digest", "text")


def _line(s: SummaryInfo) -> str:
    status = s.status if s.by is None else f"{s.status} by seq {s.by}"
    first_line = s.text.strip().splitlines()[0] if s.text.strip() else ""
    if len(first_line) > 60:
        first_line = first_line[:59] + "…"
    return f"{s.seq:>7}  {s.ctx:<8}  {s.first:>6}..{s.last:<6}  {status:<22}  {first_line}"


@summary.command("list")
@SESSION
@click.option("--json", "as_json", is_flag=True, help="one JSON object per summary")
@ROOT
def list_(session: str, as_json: bool, root: Path | None) -> None:
    """List SESSION's summaries: seq, context, span, status (active, revoked, superseded, stale)."""
    store, sid = resolved(root, session)
    with store.open(sid) as log:
        found = list_summaries(list(log.read()))
    if as_json:
        for s in found:
            click.echo(orjson.dumps({k: getattr(s, k) for k in _JSON_KEYS}))
        return
    if not found:
        click.echo(f"no summaries in {sid}")
        return
    click.echo(f"{'SEQ':>7}  {'CONTEXT':<8}  {'SPAN':^14}  {'STATUS':<22}  TEXT")
    for s in found:
        click.echo(_line(s))
