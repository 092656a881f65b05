"""``nodwyn replay SESSION``: the transcript; ``--window SEQ``: one request, proven; ``--all``: every one."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import click
import orjson

from nodwyn.cli.common import ROOT, SESSION, resolved
from nodwyn.cli.screen import hold_configured, json_safe, shown
from nodwyn.errors import CorruptLogError, NodwynError
from nodwyn.log import SessionLog
from nodwyn.replay import (
    Damaged,
    Verdict,
    replay_request,
    tolerant_events,
    transcript_json,
    transcript_lines,
    verify_all,
)
from nodwyn.values import codec
from nodwyn.values.events import Event

PROVES = (
    "verified: each request was rebuilt from the log and matches the digest recorded when it was sent; "
    "this does not prove the log is untouched (a digest is not a seal: an edited answer, usage or "
    "result with its later digests rewritten verifies too)"
)
SEAL_CHECK = "`nodwyn verify SESSION` checks a sealed session's events against its seal"


def _verdict_line(v: Verdict) -> str:
    head = f"seq {v.seq:<7} {v.ctx:<10}"
    if v.error is None:
        assert v.replayed is not None
        digest = v.replayed.digest
        short = digest[:19] + "…" if len(digest) > 20 else digest
        return f"{head} ok        {short}  window-v{v.replayed.recipe_version}"
    label = type(v.error).__name__.removesuffix("Error").lower()
    message = str(v.error).replace("\r", "\\r").replace("\n", "\\n")  # one verdict, one line
    return f"{head} refused   {label}: {message}"


def _verdict_json(v: Verdict) -> bytes:
    obj: dict[str, object] = {"seq": v.seq, "ctx": v.ctx, "ok": v.error is None}
    if v.replayed is not None:
        obj["digest"] = v.replayed.digest
        obj["recipe"] = f"window-v{v.replayed.recipe_version}"
    if v.error is not None:
        obj["error"] = type(v.error).__name__
        obj["message"] = str(v.error)
        obj["exit_code"] = v.error.exit_code
    return orjson.dumps(obj)


def _all(log: SessionLog, as_json: bool) -> int:
    total = verified = 0
    first_error: NodwynError | None = None
    for v in verify_all(log):
        total += 1
        if v.error is None:
            verified += 1
        elif first_error is None:
            first_error = v.error
        click.echo(json_safe(_verdict_json(v).decode()) if as_json else shown(_verdict_line(v)))
    refused = total - verified
    if as_json:
        doc = {"total": total, "verified": verified, "refused": refused, "proves": PROVES, "seal": SEAL_CHECK}
        click.echo(orjson.dumps(doc))
    else:
        click.echo(f"{total} requests: {verified} verified, {refused} refused")
        click.echo(f"nodwyn: {PROVES}; {SEAL_CHECK}", err=True)  # what "verified" means (ADR 0336)
    return 0 if first_error is None else first_error.exit_code


def _transcript(log: SessionLog, as_json: bool) -> bool:
    """Print the transcript, damage and all; whether the log was whole (no damage, no gap)."""
    counted = _Counting(tolerant_events(log))
    if as_json:
        for item in counted:
            if isinstance(item, Damaged):
                row = {"damaged": True, "torn": item.torn, "offset": item.offset, "size": item.size}
                click.echo(json_safe(orjson.dumps({**row, "reason": item.reason}).decode()))
            else:
                click.echo(json_safe(orjson.dumps(transcript_json(item)).decode()))
    else:
        for line in transcript_lines(counted):
            click.echo(shown(line))
    if counted.gaps:
        before, after = counted.gaps[0]
        click.echo(
            f"nodwyn: session {log.id}: events are missing: seq {after} follows seq {before}"
            + (f" (and {len(counted.gaps) - 1} more gap(s))" if len(counted.gaps) > 1 else "")
            + "; the log was cut or edited; restore it from a copy, exact replay refuses it",
            err=True,
        )
    if counted.damaged:
        click.echo(
            f"nodwyn: session {log.id}: {counted.damaged} damaged line(s), shown as '!! damaged line'; "
            "exact replay refuses this log",
            err=True,
        )
    elif counted.torn:
        click.echo(
            f"nodwyn: session {log.id}: bytes after the last whole event (seq {log.last_seq}) are not an "
            "event: a torn write, or one in progress",
            err=True,
        )
    return not counted.gaps and not counted.damaged


class _Counting:
    """Passes items through, counting the damaged and torn ones."""

    def __init__(self, items: Iterable[Event | Damaged]) -> None:
        self.items = items
        self.damaged = 0
        self.torn = 0
        self.gaps: list[tuple[int, int]] = []  # (seq before, seq after) where events are missing

    def __iter__(self) -> Iterator[Event | Damaged]:
        last = 0
        for item in self.items:
            if isinstance(item, Damaged):
                if item.torn:
                    self.torn += 1
                else:
                    self.damaged += 1
            else:
                if item.seq != last + 1:
                    self.gaps.append((last, item.seq))
                last = item.seq
            yield item


@click.command()
@SESSION
@click.option(
    "--window", "seq", type=click.IntRange(min=1), default=None, help="rebuild request SEQ and prove it"
)
@click.option("--all", "every", is_flag=True, help="verify every request: one line each, then a total")
@click.option(
    "--json", "as_json", is_flag=True, help="JSON output (with --window: the request and its digest)"
)
@click.option(
    "--expect",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="with --window: canonical bytes captured when it was sent, to locate a mismatch exactly",
)
@ROOT
@click.pass_context
def replay(
    ctx: click.Context,
    session: str,
    seq: int | None,
    every: bool,
    as_json: bool,
    expect: Path | None,
    root: Path | None,
) -> None:
    """Replay SESSION from its log alone.

    Without options: the conversation as a person reads it, for any log. With --window SEQ: rebuild
    the request at SEQ from the events before it and the recipe recorded before it, and write its
    canonical bytes to stdout (no newline, so `| sha256sum` shows its digest) only if they hash to
    the digest recorded when it was sent. --all verifies every request. Replay never reads the
    current configuration or extension files and never runs a model or a tool.
    """
    if seq is not None and every:
        raise click.UsageError("--window and --all exclude each other")
    if expect is not None and seq is None:
        raise click.UsageError("--expect goes with --window SEQ")
    store, sid = resolved(root, session)
    hold_configured()  # what is printed is cleared of the credentials held now (ADR 0332)
    with store.open(sid) as log:
        if every:
            code = _all(log, as_json)
            if code:
                sys.exit(code)
            return
        if seq is None:
            if not _transcript(log, as_json):  # a damaged log is shown whole, warned, exit 5
                sys.exit(CorruptLogError.exit_code)
            return
        r = replay_request(
            log, seq, expect=expect.read_bytes() if expect is not None else None, complete=True
        )
        if as_json:
            doc = {
                "seq": r.seq,
                "ctx": r.ctx,
                "digest": r.digest,
                "recipe": f"window-v{r.recipe_version}",
                "verified": True,
                "request": codec.request_to_json(r.request),
            }
            click.echo(json_safe(orjson.dumps(doc).decode()))
            return
        sys.stdout.flush()
        sys.stdout.buffer.write(r.canonical)
        sys.stdout.buffer.flush()
