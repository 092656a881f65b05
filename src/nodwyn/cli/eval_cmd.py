"""``nodwyn eval SPEC.toml`` runs a task × variant grid as sessions; ``nodwyn eval report ID``
recomputes its table from the logs alone."""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

import click
import orjson

from nodwyn.cli.common import ROOT, root_dir
from nodwyn.compose import seal_key
from nodwyn.errors import ConfigError
from nodwyn.evals import Engine, Report, load_spec, report, report_table, run_eval
from nodwyn.log import Store


def _emit(rep: Report, as_json: bool) -> None:
    if as_json:
        doc = {
            "eval": rep.eval_id,
            "runs": [asdict(r) for r in rep.runs],
            "lost": [r.to_data() for r in rep.lost],
            "cells": [asdict(c) for c in rep.cells],
            "differences": [asdict(d) for d in rep.differences],
        }
        click.echo(orjson.dumps(doc).decode())
    else:
        click.echo(f"eval {rep.eval_id}")
        click.echo(report_table(rep))


@click.command("eval", context_settings={"ignore_unknown_options": False})
@click.argument("target")
@click.argument("eval_id", required=False)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Runs at once on this machine.",
)
@click.option(
    "--ray", "ray", metavar="ADDRESS", default=None, help="Run on a Ray cluster (`local` starts one here)."
)
@click.option("--resume", is_flag=True, help="Skip the runs of this SPEC already recorded.")
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON document: a row per run, the cells, the differences."
)
@ROOT
def eval_(
    target: str,
    eval_id: str | None,
    workers: int,
    ray: str | None,
    resume: bool,
    as_json: bool,
    root: Path | None,
) -> None:
    """Run SPEC.toml's task × variant grid as sessions and print its table; `report ID` recomputes
    an eval's table from the logs alone."""
    store = Store(root_dir(root), seal=seal_key(os.environ))
    if target == "report":
        if eval_id is None:
            raise click.UsageError("`nodwyn eval report ID`: give the eval's id (ev-...)")
        _emit(report(store, eval_id), as_json)
        return
    if eval_id is not None:
        raise click.UsageError("`nodwyn eval SPEC.toml` takes one argument")
    spec = load_spec(Path(target))
    env = dict(os.environ)
    if root is not None:
        env["NODWYN_HOME"] = str(root)
    if ray not in (None, "local") and workers != 2:
        raise ConfigError("--workers sizes runs on this machine (and --ray local); a cluster's CPUs decide")

    def progress(rec: object) -> None:
        if not as_json:
            from nodwyn.evals import Recorded

            assert isinstance(rec, Recorded)
            click.echo(
                f"[{rec.key.label()}: {rec.reason}{' (retried)' if rec.attempt > 1 else ''}]", err=True
            )

    run_eval(spec, store, env, Engine(workers=workers, ray=ray), resume=resume, on_run=progress)
    _emit(report(store, spec.eval_id), as_json)
