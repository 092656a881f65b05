"""What the commands that read sessions share: the SESSION argument, the ``--root`` option, the
data root it overrides, the store under it, and the model prices for cost columns."""

from __future__ import annotations

import os
from pathlib import Path

import click

from nodwyn.cli.complete import complete_sessions
from nodwyn.errors import ConfigError
from nodwyn.log import Store, data_root
from nodwyn.values.model import Prices

SESSION = click.argument("session", shell_complete=complete_sessions)
ROOT = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="data directory holding sessions/ (default: NODWYN_HOME or ~/.local/share/nodwyn)",
)


def root_dir(root: Path | None) -> Path:
    """``--root`` when given, else the data root the environment names."""
    return root if root is not None else data_root(os.environ)


def store_for(root: Path | None) -> Store:
    return Store(root_dir(root))


def resolved(root: Path | None, session: str) -> tuple[Store, str]:
    """The store and SESSION's id in it (an id, a unique prefix, its random suffix, latest)."""
    store = store_for(root)
    return store, store.resolve(session)


def model_prices() -> dict[str, Prices]:
    """Prices by model entry from config.toml; a broken config costs nothing but the cost column."""
    from nodwyn.compose import load_config

    try:
        return {n: m.prices for n, m in load_config(os.environ).models.items() if m.prices is not None}
    except ConfigError as exc:
        click.echo(f"nodwyn: costs unknown: {exc}", err=True)
        return {}
