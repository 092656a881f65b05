"""The ``nodwyn`` command: a thin front end over the library.

Subcommands live in their own modules and are imported only when used. Every ``NodwynError`` is
turned into one line on stderr and its class's exit code here, in one place.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

import click

from nodwyn import lazy
from nodwyn.errors import NodwynError, StorageError

if TYPE_CHECKING:
    from nodwyn.cli.complete import complete_models, complete_sessions
    from nodwyn.cli.screen import Stream, hold, hold_configured, shown

__all__ = ["Stream", "complete_models", "complete_sessions", "hold", "hold_configured", "main", "shown"]

__getattr__ = lazy(
    __name__, {"complete": "complete_models complete_sessions", "screen": "Stream hold hold_configured shown"}
)

# name -> (module, attribute, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "sessions": ("nodwyn.cli.sessions", "sessions", "Sessions: first message, model, cost (-q searches)."),
    "log": ("nodwyn.cli.sessions", "log", "Print a session's events."),
    "stats": ("nodwyn.cli.stats", "stats", "A session's totals (token cache rate, cost) and requests."),
    "cache": ("nodwyn.cli.stats", "cache", "Why each request of a session hit or missed the cache."),
    "console": ("nodwyn.cli.console", "console", "Serve the read-only web console on 127.0.0.1."),
    "fake": ("nodwyn.cli.fake", "fake", "Run a fake provider on 127.0.0.1 for offline tests."),
    "run": ("nodwyn.cli.run", "run", "Run one task: the answer on stdout, figures on stderr (-q, --json)."),
    "chat": ("nodwyn.cli.run", "chat", "Interactive turns with line editing and history (/help)."),
    "resume": ("nodwyn.cli.run", "resume", "Continue a session (latest, an id or its suffix) from its log."),
    "models": ("nodwyn.cli.models", "models", "List, add, set, test model entries; set the default."),
    "config": (
        "nodwyn.cli.config_cmd",
        "config",
        "Where config.toml is; every effective value and its source.",
    ),
    "keys": ("nodwyn.cli.keys", "keys", "Set, list and remove credentials in the keychain file."),
    "mcp": ("nodwyn.cli.mcp", "mcp", "The MCP servers a session would start: list, test NAME."),
    "trust": ("nodwyn.cli.models", "trust", "Trust a workspace's .nodwyn/ extension files."),
    "replay": ("nodwyn.cli.replay", "replay", "Transcript of a session; --window SEQ proves one request."),
    "verify": ("nodwyn.cli.verify", "verify", "Check a sealed session's events against its seal."),
    "export": ("nodwyn.cli.export", "export", "A session as Markdown, JSON or OpenTelemetry spans."),
    "summary": ("nodwyn.cli.summary", "summary", "Add, revoke and list reviewed summaries of a session."),
    "eval": ("nodwyn.cli.eval_cmd", "eval_", "Run a task × variant grid as sessions; `eval report ID`."),
    "whatif": (
        "nodwyn.cli.whatif",
        "whatif",
        "Imported sessions under nodwyn's window and other agents' context policies.",
    ),
    "import": (
        "nodwyn.cli.import_cmd",
        "import_",
        "Import other agents' runs (Claude Code, Codex, ...) as sessions.",
    ),
    "tui": ("nodwyn.tui", "tui", "The session full-screen (also `nodwyn` alone on a terminal)."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module, attr, _ = entry
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS:
            close = difflib.get_close_matches(name, list(COMMANDS), n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise click.UsageError(f"no command {name!r}{hint} (`nodwyn --help` lists them)", ctx)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup)
@click.version_option(package_name="nodwyn")
def cli() -> None:
    """nodwyn: an LLM agent runtime that keeps the prompt cache warm and proves what it sent."""


def one_line(message: str) -> str:
    """An error is one line, whatever text (a file's, a provider's) its message carries: credentials
    redacted, control characters (newlines too) spelled out (cli/screen.py)."""
    from nodwyn.cli.screen import shown

    return shown(message, newlines=False)


def main(argv: list[str] | None = None) -> Any:
    # NO_COLOR (https://no-color.org): set and not empty, no colour even on a terminal
    color = False if os.environ.get("NO_COLOR") else None
    if argv is None and len(sys.argv) <= 1 and sys.stdin.isatty() and sys.stdout.isatty():
        argv = ["tui"]  # `nodwyn` alone on a terminal opens the full-screen session
    try:
        return cli.main(args=argv, prog_name="nodwyn", standalone_mode=False, color=color)
    except NodwynError as exc:
        click.echo(f"nodwyn: {one_line(str(exc))}", err=True)
        sys.exit(exc.exit_code)
    except OSError as exc:  # the library turns the disk's refusals into StorageError; this is the rest
        what = f"{exc.strerror or type(exc).__name__}" + (f" ({exc.filename})" if exc.filename else "")
        click.echo(f"nodwyn: the system refused: {one_line(what)}; check the file named and retry", err=True)
        sys.exit(StorageError.exit_code)
    except click.exceptions.Abort:
        click.echo("nodwyn: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
