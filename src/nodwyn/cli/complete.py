"""Shell completion of session ids and model names (click's completion: see the README).

Completion runs on every Tab press, so it reads only the store's directory listing and config.toml,
and a problem with either completes nothing rather than printing an error into the shell.
"""

from __future__ import annotations

import os
from pathlib import Path

import click
from click.shell_completion import CompletionItem

from nodwyn.errors import NodwynError
from nodwyn.log import Store, data_root


def complete_sessions(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    root = ctx.params.get("root")  # --root when given, as cli.common's store_for reads it
    try:
        ids = Store(root if isinstance(root, Path) else data_root(os.environ)).ids()
    except (NodwynError, OSError):
        return []
    names = ["latest", "last", *reversed(ids)]
    return [CompletionItem(n) for n in names if n.startswith(incomplete) or n[17:].startswith(incomplete)]


def complete_models(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from nodwyn.compose import load_config

    try:
        names = sorted(load_config(os.environ).models)
    except (NodwynError, OSError):
        return []
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]
