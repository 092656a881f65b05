"""The ``nodwyn tui`` command (registered by name in ``cli.COMMANDS``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from nodwyn.agent import MODES
from nodwyn.cli import complete_models, complete_sessions
from nodwyn.compose import APPROVALS
from nodwyn.errors import ConfigError
from nodwyn.values.recipe import DEFAULT_VERSION


@click.command()
@click.option(
    "-m", "--model", "model", default=None, shell_complete=complete_models, help="A [models.NAME] entry."
)
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The directory the tools work in (default: the current directory).",
)
@click.option("-c", "--continue", "cont", is_flag=True, help="Continue the latest session.")
@click.option(
    "-r", "--resume", "session", default=None, shell_complete=complete_sessions, help="Resume SESSION."
)
@click.option("--yes", is_flag=True, help="Allow writes and shell commands without asking (full-auto).")
@click.option("--approval", type=click.Choice(APPROVALS), default=None, help="ask | auto-edit | full-auto.")
@click.option("--sandbox", type=click.Choice(MODES), default=None, help="Where shell commands run.")
@click.option("--dangerously-no-sandbox", "no_sandbox", is_flag=True, help="Allow --yes with --sandbox off.")
@click.option(
    "--recipe",
    default=None,
    metavar="window-vN",
    help=f"The window recipe (default window-v{DEFAULT_VERSION}).",
)
def tui(
    model: str | None,
    workspace: Path | None,
    cont: bool,
    session: str | None,
    yes: bool,
    approval: str | None,
    sandbox: str | None,
    no_sandbox: bool,
    recipe: str | None,
) -> None:
    """The session full-screen: streaming replies, approvals, the cache panel, resume (F1: keys)."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise ConfigError(
            "nodwyn tui needs a terminal on stdin and stdout; use `nodwyn run` or `nodwyn chat` otherwise"
        )
    from nodwyn.tui.app import NodwynApp

    app = NodwynApp(
        env=os.environ,
        workspace=workspace or Path.cwd(),
        model_name=model,
        resume=session or ("latest" if cont else None),
        yes=yes,
        recipe=recipe,
        sandbox=sandbox,
        approval=approval,
        dangerously_no_sandbox=no_sandbox,
    )
    app.run()
    if app.failed is not None:
        raise app.failed  # one line and its exit code, from cli.main
    if app.return_code:
        sys.exit(app.return_code)
