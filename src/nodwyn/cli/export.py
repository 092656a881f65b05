"""``nodwyn export SESSION --format md|json|otel``: a session for people and other tools."""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

import click
import orjson

from nodwyn.cli.common import ROOT, model_prices, resolved
from nodwyn.errors import ConfigError

if TYPE_CHECKING:
    from nodwyn.stats import Aggregator
    from nodwyn.values.events import Event


def _version() -> str:
    try:
        return version("nodwyn")
    except PackageNotFoundError:
        return "0"


def _headers(pairs: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise ConfigError(
                f"--otlp-header {pair!r} is not NAME=VALUE; pass e.g. --otlp-header x-api-key=..."
            )
        out[name.strip()] = value.strip()
    return out


@click.command()
@click.argument("session")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["md", "json", "otel"]),
    default="md",
    show_default=True,
    help="md: a Markdown transcript; json: the session as one JSON document; otel: OpenTelemetry spans",
)
@click.option(
    "-o",
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="write here instead of stdout",
)
@click.option(
    "--otlp-endpoint",
    default=None,
    metavar="URL",
    help="otel: send the spans to this OTLP/HTTP endpoint (e.g. http://127.0.0.1:4318), not to stdout",
)
@click.option(
    "--otlp-protocol",
    type=click.Choice(["protobuf", "json"]),
    default="protobuf",
    show_default=True,
    help="otel: the body sent to --otlp-endpoint",
)
@click.option(
    "--otlp-header", multiple=True, metavar="NAME=VALUE", help="otel: a header to send (repeatable)"
)
@ROOT
def export(
    session: str,
    fmt: str,
    out: Path | None,
    otlp_endpoint: str | None,
    otlp_protocol: str,
    otlp_header: tuple[str, ...],
    root: Path | None,
) -> None:
    """Export SESSION (an id, a unique prefix, or latest) as Markdown, JSON or OpenTelemetry spans."""
    if otlp_endpoint is not None and fmt != "otel":
        raise click.UsageError("--otlp-endpoint sends spans: use it with --format otel")
    headers = _headers(otlp_header)
    from nodwyn.cli.screen import hold_configured, json_safe, redacted_events, shown

    store, sid = resolved(root, session)
    hold_configured()  # every output, not only a terminal, is cleared of the credentials held now
    with store.open(sid) as log:
        events = redacted_events(log.read())
    from nodwyn.stats import Aggregator

    agg = Aggregator(model_prices())
    if fmt == "otel" and otlp_endpoint is not None:
        _send_spans(events, sid, otlp_endpoint, otlp_protocol, headers)
        return
    body = _document(fmt, events, sid, agg)
    if out is not None:
        out.write_bytes(body)
        click.echo(f"wrote {out}", err=True)
    else:
        if sys.stdout.isatty():  # shown to a person: control characters spelled out too
            text = body.decode("utf-8", "replace")
            body = (shown(text) if fmt == "md" else json_safe(text)).encode()
        sys.stdout.buffer.write(body)
        sys.stdout.flush()


def _document(fmt: str, events: list[Event], sid: str, agg: Aggregator) -> bytes:
    """The session as JSON, Markdown, or OTLP/JSON spans."""
    if fmt == "json":
        from nodwyn.export import session_document

        body = orjson.dumps(
            session_document(events, sid, agg, nodwyn_version=_version()), option=orjson.OPT_INDENT_2
        )
        return body + b"\n"
    if fmt == "md":
        from nodwyn.export import session_markdown

        agg.feed_all(events)
        return ("\n".join(session_markdown(events, sid, agg.totals())).rstrip() + "\n").encode()
    from nodwyn.export import otlp_json, spans

    found = spans(events, sid)
    return orjson.dumps(otlp_json(found, sid, _version()), option=orjson.OPT_INDENT_2) + b"\n"


def _send_spans(events: list[Event], sid: str, endpoint: str, protocol: str, headers: dict[str, str]) -> None:
    from nodwyn.export import otlp_json, otlp_protobuf, post_otlp, spans

    found = spans(events, sid)
    encoded = (
        otlp_protobuf(found, sid, _version())
        if protocol == "protobuf"
        else orjson.dumps(otlp_json(found, sid, _version()))
    )
    where = post_otlp(endpoint, encoded, protocol, headers=headers)  # printable: no password
    click.echo(f"sent {len(found)} spans of session {sid} to {where}", err=True)
