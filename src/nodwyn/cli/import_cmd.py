"""``nodwyn import PATH…``: other agents' session files as nodwyn sessions (``nodwyn.imports``)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from nodwyn.cli.common import ROOT, store_for
from nodwyn.cli.screen import shown
from nodwyn.errors import ConfigError
from nodwyn.imports import find, imported_sessions, load, source_of, write
from nodwyn.values.model import Prices


def prices_for(model: str) -> dict[str, Prices]:
    """The prices config.toml states for ``model`` (an entry of that name, or whose wire model id
    it is), keyed by ``model``; empty when none does (the session's cost stays unknown)."""
    from nodwyn.compose import load_config

    try:
        models = load_config(os.environ).models
    except ConfigError as exc:
        click.echo(f"nodwyn: costs unknown: {exc}", err=True)
        return {}
    tail = model.rsplit("/", 1)[-1]  # "litellm_proxy/anthropic/claude-x" is served as "claude-x"
    for m in models.values():
        if m.prices is not None and (model in (m.name, m.model) or tail == m.model):
            return {model: m.prices}
    return {}


@click.command("import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@ROOT
def import_(paths: tuple[Path, ...], root: Path | None) -> None:
    """Import other agents' runs as sessions: Claude Code transcripts, Codex CLI rollouts,
    mini-swe-agent trajectories, SWE-agent .traj files, OpenHands event folders (files or folders).

    A file already imported (same bytes) is not imported again; a file that cannot be read stops
    the import with one line naming it, and leaves no session of it behind."""
    store = store_for(root)
    held = imported_sessions(store)
    for path in paths:
        for found in find(path):
            run = load(found)  # the whole source is read and checked before anything is written
            source = source_of(found, run)
            if source.sha256 in held:
                click.echo(shown(f"already imported: {found.path} is session {held[source.sha256]}"))
                continue
            model = run.model or next((s.model for s in run.requests if s.model), "")
            sid = write(store, run, source, prices_for(model) if model else None)
            held[source.sha256] = sid
            click.echo(
                shown(f"imported {found.path} ({run.format}, {len(run.replies)} requests) as session {sid}")
            )
