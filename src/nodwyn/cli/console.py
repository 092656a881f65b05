"""``nodwyn console``: the read-only web console on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import click

from nodwyn.cli.common import ROOT, model_prices, root_dir
from nodwyn.cli.screen import held, hold_configured
from nodwyn.console import allowed_hosts, bind, check_host


@click.command()
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8470, show_default=True, help="port to listen on"
)
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="interface (loopback only unless --allow-remote)"
)
@click.option(
    "--allow-remote", is_flag=True, help="serve on a non-loopback interface (the console has no login)"
)
@click.option(
    "--allow-host",
    "allow_host",
    multiple=True,
    help="a Host header name to serve besides loopback and the bound address (repeatable)",
)
@ROOT
def console(port: int, host: str, allow_remote: bool, allow_host: tuple[str, ...], root: Path | None) -> None:
    """Serve the web console: sessions, totals, the per-request cache chart, windows, transcripts."""
    import uvicorn

    from nodwyn.console import make_app

    check_host(host, allow_remote=allow_remote)
    sock = bind(host, port)  # before the URL is printed: a taken port is one line, exit 2
    try:
        hold_configured()  # the credentials held now, cleared from every page (ADR 0332)
        app = make_app(root_dir(root), model_prices(), hosts=allowed_hosts(host, allow_host), known=held())
        bound = sock.getsockname()[1]
        shown = host if ":" not in host else f"[{host}]"
        click.echo(f"nodwyn console on http://{shown}:{bound}/ (read-only; Ctrl-C stops)")
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        server.run(sockets=[sock])
    finally:
        sock.close()
