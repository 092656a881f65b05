"""``nodwyn fake serve``: run a fake provider on 127.0.0.1 for offline tests of a setup."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any, get_args

import click

from nodwyn.fakes import DEFAULT_CACHE, HANDLERS, ITEM_KEYS, FakeServer, load_script
from nodwyn.values.model import Family


@click.group()
def fake() -> None:
    """Fake providers that speak each API on 127.0.0.1 with a modelled prompt cache."""


def _script_help() -> str:
    lines = "\n".join(f"  {key}: {what}" for key, what in ITEM_KEYS.items())
    return (
        "The script (--script) is JSON Lines: one reply per line, answered in order, each an object "
        "with these keys (all optional):\n\n\b\n" + lines + '\n\nExample line: {"text": "Looking.", '
        '"calls": [{"name": "fs-read", "arguments": {"path": "a.py"}}]}'
    )


@fake.command(epilog=_script_help())
@click.option("--api", "api", type=click.Choice(sorted(HANDLERS)), required=True, help="The API to speak.")
@click.option(
    "--cache",
    type=click.Choice(["single", "blocks", "breakpoints", "replicas"]),
    default=None,
    help="Cache model (default: single for ollama, blocks for openai-chat and responses, "
    "breakpoints for anthropic).",
)
@click.option(
    "--replicas",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    help="Replicas (--cache replicas).",
)
@click.option(
    "--cache-ttl",
    "cache_ttl",
    metavar="SECONDS",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds after which the cache forgets an entry nothing used (default: never, by time).",
)
@click.option(
    "--family", type=click.Choice(get_args(Family)), default=None, help="openai-chat server family."
)
@click.option(
    "--script",
    "script_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="Replies, one JSON object per line, given in order.",
)
@click.option(
    "--port", type=click.IntRange(min=0, max=65535), default=0, show_default=True, help="0 picks a free port."
)
@click.option(
    "--model", "models", multiple=True, default=("fake-model",), show_default=True, help="Model ids it lists."
)
def serve(
    api: Any,
    cache: Any,
    replicas: int,
    cache_ttl: float | None,
    family: str | None,
    script_path: Path,
    port: int,
    models: tuple[str, ...],
) -> None:
    """Serve the script's replies until interrupted; prints the server's URL first."""
    items = load_script(script_path)
    server = FakeServer(
        api=api,
        cache=cache,
        script=items,
        family=family,
        replicas=replicas,
        port=port,
        models=models,
        cache_ttl_seconds=cache_ttl,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with server:
        click.echo(server.url, nl=True)
        click.echo(
            f"fake {api} ({cache or DEFAULT_CACHE[api]} cache"
            f"{f', entries expire after {cache_ttl:g} s unused' if cache_ttl is not None else ''}), "
            f"{len(items)} scripted replies; "
            "Ctrl-C stops it",
            err=True,
        )
        try:
            while not stop.wait(0.2):
                pass
        except KeyboardInterrupt:
            pass
        left = len(server.remaining)
    click.echo(f"stopped; {left} scripted replies unused", err=True)
