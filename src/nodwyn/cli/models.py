"""``nodwyn models list|add|set|test|presets`` and ``nodwyn trust DIR``."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from pathlib import Path

import click
import orjson

from nodwyn.cli.complete import complete_models
from nodwyn.cli.screen import shown
from nodwyn.compose import (
    all_presets,
    backends,
    config_path,
    context_line,
    edit_model,
    entry_for,
    load_config,
    probe_model,
    published_context,
    report,
    set_control,
    write_cache_asks,
)
from nodwyn.compose import trust as trust_dir
from nodwyn.errors import ConfigError, ProviderError
from nodwyn.values.codec import prices_to_json


@click.group()
def models() -> None:
    """List, add, change and test the [models.NAME] entries of config.toml."""


@models.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per model, one per line.")
def list_models(as_json: bool) -> None:
    """The configured models; * marks the [control] model (the default)."""
    config = load_config(os.environ)
    if as_json:
        for name in sorted(config.models):
            m = config.models[name]
            doc = {
                "name": name,
                "default": name == config.control,
                "api": m.api,
                "model": m.model,
                "context_size": m.context_size,
                "base_url": m.base_url,
                "credential": m.credential,
                "takes_images": m.takes_images,
                "prices": None if m.prices is None else prices_to_json(m.prices),
            }
            click.echo(orjson.dumps(doc).decode())
        return
    for name in sorted(config.models):
        m = config.models[name]
        mark = "*" if name == config.control else " "
        where = m.base_url or m.server or "in-process"
        click.echo(f"{mark} {name:<16} {m.api:<12} {m.model:<28} ctx {m.context_size:<8} {where}")


def _pairs(pairs: tuple[str, ...]) -> dict[str, str]:
    values: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"{pair!r} is not KEY=VALUE (e.g. context_size=32768)")
        values[key.strip()] = value.strip()
    return values


@models.command("add")
@click.argument("name")
@click.argument("pairs", nargs=-1)
@click.option(
    "--preset", default=None, help="A provider's keys (`nodwyn models presets`); KEY=VALUE overrides."
)
def add(name: str, pairs: tuple[str, ...], preset: str | None) -> None:
    """Add [models.NAME] from KEY=VALUE pairs (api=, model=, base_url=, context_size=, ...), or
    from --preset P and model=ID (context_size= asked for on a terminal, never guessed)."""
    path = config_path(os.environ)
    values = _pairs(pairs)
    if preset is not None:
        if "context_size" not in values and "model" in values:
            size = _listed_context(name, entry_for(preset, {**values, "context_size": "1"}))
            if size is not None:
                values["context_size"] = str(size)
            elif sys.stdin.isatty():
                values["context_size"] = str(
                    click.prompt(
                        "context size in tokens (from the provider's model page)", type=click.IntRange(1)
                    )
                )
        values = entry_for(preset, values)
    m = edit_model(path, name, values, create=True)
    click.echo(f"added [models.{name}] ({m.api} {m.model}) to {path}")


def _listed_context(name: str, entry: dict[str, str]) -> int | None:
    """The context size the provider's model list publishes for the entry's model (said on
    stderr), or None: the person is asked instead, never a guess (ADR 0432)."""
    from nodwyn.compose import Config, model_from_table, toml_value

    path = config_path(os.environ)
    config = load_config(os.environ) if path.exists() else Config(path=path, models={})
    settings = model_from_table(name, {k: toml_value(v) for k, v in entry.items()}, path)
    config = dataclasses.replace(config, models={**config.models, name: settings})  # its credential too
    with contextlib.closing(backends(os.environ, config)) as made:
        published = published_context(made(settings), settings)
    if published.size is None:
        why = published.error or "it publishes none for this model"
        click.echo(f"nodwyn: context_size is not in the provider's model list ({shown(why)})", err=True)
        return None
    click.echo(
        f"nodwyn: context_size={published.size} from the provider's model list ({published.field})", err=True
    )
    return published.size


@models.command("presets")
def list_presets() -> None:
    """The provider presets `models add --preset` takes, with the keys each writes."""
    for name, table in sorted(all_presets().items()):
        keys = " ".join(f"{k}={v}" for k, v in table.items() if k != "about")
        click.echo(f"{name:<11} {table.get('about', '')}: {keys}")


@models.command("set")
@click.argument("name")
@click.argument("pairs", nargs=-1, required=True)
def set_(name: str, pairs: tuple[str, ...]) -> None:
    """Change keys of [models.NAME]: KEY=VALUE ... (prices.input=0.5 for a price)."""
    path = config_path(os.environ)
    edit_model(path, name, _pairs(pairs), create=False)
    click.echo(f"updated [models.{name}] in {path}")


@models.command("default")
@click.argument("name", shell_complete=complete_models)
def default(name: str) -> None:
    """Make NAME the model sessions use when no -m is given ([control] model)."""
    path = config_path(os.environ)
    set_control(path, name)
    click.echo(f"default model: {name} ([control] model in {path})")


def _notice(text: str) -> None:
    """Each retry, as it happens, on stderr."""
    click.echo(f"nodwyn: {shown(text)}", err=True)


@models.command("test")
@click.argument("name", shell_complete=complete_models)
def test(name: str) -> None:
    """Send two requests as a task would; report what the provider accepted and its cache figures."""
    config = load_config(os.environ)
    for line in write_cache_asks(config):
        click.echo(f"nodwyn: {line}", err=True)
    settings = config.model(name)
    backend = backends(os.environ, config, _notice)(settings)
    results = probe_model(backend, settings)
    for line in report(settings, results):
        click.echo(shown(line))
    click.echo(shown(context_line(settings, published_context(backend, settings))))
    refused = next((r for r in results if not r.ok), None)
    if refused is not None:
        raise ProviderError(
            f"model {name}: the provider refused request {refused.request} (see above); "
            "fix the entry with `nodwyn models set` and test again",
            field=refused.field,
        )


@click.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path), default=".")
def trust(directory: Path) -> None:
    """Trust DIRECTORY: its .nodwyn/*.py extension files load at session start."""
    real = trust_dir(directory, os.environ)
    click.echo(f"trusted {real}: its .nodwyn/*.py extension files will load at session start")
