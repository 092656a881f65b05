"""``nodwyn config path`` and ``nodwyn config show`` (issue 26, item 4; ADR 0381): where config.toml
is, and every effective value with where it came from (the file, a default, a built-in entry)."""

from __future__ import annotations

import os
import tomllib

import click
import orjson

from nodwyn.cli.screen import hold_configured, redacted, shown
from nodwyn.compose import config_path, effective, load_config


@click.group()
def config() -> None:
    """Where config.toml is, and what it sets (every key: docs/config.md)."""


@config.command()
def path() -> None:
    """The config file in use (NODWYN_CONFIG, else the config directory's config.toml), and whether
    it exists."""
    where = config_path(os.environ)
    click.echo(str(where))
    if not where.exists():
        click.echo(f"nodwyn: {where} does not exist yet; every value is its default", err=True)


@config.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object a key: key, value, source.")
def show(as_json: bool) -> None:
    """Every effective value of config.toml's tables and where it came from: the file
    (`PATH [table]`), `default`, or `built-in` (a model entry nodwyn ships)."""
    cfg = load_config(os.environ)  # a bad file is one line and exit 2, as for every command
    doc = tomllib.loads(cfg.path.read_text(encoding="utf-8")) if cfg.path.exists() else {}
    hold_configured()
    rows = effective(cfg, doc)
    if as_json:
        for key, value, source in rows:
            line = orjson.dumps({"key": key, "value": value, "source": source}, default=str).decode()
            click.echo(redacted(line))
        return
    width = max(len(key) for key, _, _ in rows)
    for key, value, source in rows:
        text = orjson.dumps(value, default=str).decode()
        click.echo(f"{key:<{width}}  {shown(text, newlines=False)}  ({source})")
