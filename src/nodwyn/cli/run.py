"""``nodwyn run``, ``nodwyn chat`` and ``nodwyn resume``: sessions in the terminal."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from types import FrameType

import click

from nodwyn.agent.attach import read_image
from nodwyn.agent.figures import cache_figures, describe
from nodwyn.agent.loop import Agent
from nodwyn.agent.setup import Opened, open_agent
from nodwyn.agent.tools import Outcome
from nodwyn.errors import NodwynError
from nodwyn.values.content import ToolCall
from nodwyn.values.events import Event
from nodwyn.values.recipe import DEFAULT_VERSION
from nodwyn.values.request import Response


class LineDisplay:
    """Line mode: the reply as it streams, one line per tool call and result, a cache line per request."""

    def __init__(self, verbose: bool = True) -> None:
        self.verbose = verbose
        self._open = False

    def _end_line(self) -> None:
        if self._open:
            click.echo()
            self._open = False

    def delta(self, kind: str, fragment: str) -> None:
        if kind == "text":
            click.echo(fragment, nl=False)
            self._open = not fragment.endswith("\n")
        else:
            click.secho(fragment, nl=False, dim=True)

    def request(self, event: Event) -> None:
        d = event.data
        extra = []
        if d.get("trim"):
            extra.append(f"trim, elided {len(d.get('elided', []))}")
        if d.get("no_tools"):
            extra.append("no tools")
        if d.get("offered_tools"):
            extra.append("tools: " + ",".join(d["offered_tools"]))
        tail = f" ({'; '.join(extra)})" if extra else ""
        click.secho(f"[request {event.seq} in {event.ctx}, ~{d.get('estimate', '?')} tokens{tail}]", dim=True)

    def response(self, event: Event, response: Response) -> None:
        self._end_line()
        u = response.usage
        cached = "?" if u.cached_tokens is None else f"{u.cached_tokens:,}"
        prompt = "?" if u.prompt_tokens is None else f"{u.prompt_tokens:,}"
        ms = response.timings.prefill_ms
        timing = "" if ms is None else f", prefill {ms:,.0f} ms"
        click.secho(f"[reply {event.seq}: {cached} of {prompt} prompt tokens cached{timing}]", dim=True)

    def tool_call(self, ctx: str, call: ToolCall) -> None:
        args = call.arguments if len(call.arguments) <= 200 else call.arguments[:200] + "…"
        click.secho(f"→ {call.name} {args}", fg="cyan")

    def tool_result(self, ctx: str, call: ToolCall, outcome: Outcome) -> None:
        first = outcome.text.strip().splitlines()[0] if outcome.text.strip() else ""
        lines = outcome.text.count("\n") + 1
        if outcome.error:
            click.secho(f"  ✗ {first[:300]}", fg="red")
        else:
            click.secho(f"  ✓ {lines} lines" + (f": {first[:100]}" if first else ""), dim=True)

    def notice(self, text: str) -> None:
        self._end_line()
        click.secho(f"nodwyn: {text}", fg="yellow", err=True)


def _ask(question: str) -> bool:
    return click.confirm(f"allow {question}?", default=False, err=True)


def _finish(agent: Agent) -> None:
    """The session's cache figures, over the events the agent holds: all of them, or for a session
    resumed from a start point past its first event, those from there on (ADR 0114)."""
    figures = cache_figures(agent.log.read(agent.first_seq))
    since = f" (from seq {agent.first_seq}, where the resumed window starts)" if agent.first_seq > 1 else ""
    click.echo(f"session {agent.session_id}: {describe(figures)}{since}")


def _recipe_option(f: click.decorators.FC) -> click.decorators.FC:
    return click.option(
        "--recipe",
        "recipe",
        default=None,
        metavar="window-vN",
        help=f"The window recipe (default: window-v{DEFAULT_VERSION} for a new session, its own on resume).",
    )(f)


def _options(f: click.decorators.FC) -> click.decorators.FC:
    f = _recipe_option(f)
    f = click.option(
        "--model", "model", default=None, help="A [models.NAME] entry (default: [control] model)."
    )(f)
    f = click.option(
        "--workspace",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="The directory the tools work in (default: the current directory).",
    )(f)
    f = click.option("--yes", is_flag=True, help="Allow writes and shell commands without asking.")(f)
    f = click.option(
        "--image",
        "images",
        multiple=True,
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="Attach an image.",
    )(f)
    return f


def _end_on_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _open(
    model: str | None,
    workspace: Path | None,
    yes: bool,
    resume: str | None = None,
    recipe: str | None = None,
) -> Opened:
    # SIGTERM and SIGHUP (the terminal closed) end the session as Ctrl-C does: through the
    # `finally` that kills what its shell commands left running and releases the log.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _end_on_signal)
    opened = open_agent(
        env=os.environ,
        workspace=workspace or Path.cwd(),
        model_name=model,
        resume=resume,
        yes=yes,
        ask=_ask,
        display=LineDisplay(),
        recipe_version=recipe,
    )
    agent = opened.agent
    click.secho(
        f"[session {agent.session_id} · model {agent.model.name} · window-v{agent.recipe.version}"
        f" · workspace {agent.workspace}]",
        dim=True,
    )
    return opened


@click.command()
@click.argument("task")
@_options
def run(
    task: str,
    model: str | None,
    workspace: Path | None,
    yes: bool,
    images: tuple[Path, ...],
    recipe: str | None,
) -> None:
    """Run one task (one turn) and print the session id and its cache figures."""
    for path in images:
        read_image(path)  # a bad image is refused before a session starts
    opened = _open(model, workspace, yes, recipe=recipe)
    agent = opened.agent
    try:
        result = agent.user_turn(task, images)
        if result.stopped:
            click.echo(f"(turn ended: {result.stopped})", err=True)
    finally:
        _finish(agent)
        opened.close()


def _chat_loop(opened: Opened, first_images: tuple[Path, ...]) -> None:
    agent = opened.agent
    strategies = opened.extensions.strategies
    images = first_images
    extra = "".join(f", /{name}" for name in sorted(strategies))
    click.secho(f"chat: type a message; /plan TASK, /compact, /model NAME{extra}, /quit", dim=True)
    while True:
        try:
            line = click.prompt("you", prompt_suffix="> ", default="", show_default=False, err=True)
        except (EOFError, click.exceptions.Abort):
            break
        text = line.strip()
        if not text:
            continue
        try:
            if text in ("/quit", "/exit"):
                break
            if text == "/compact":
                note = agent.compact()
                click.secho(f"[compacted; the note is {len(note)} characters]", dim=True)
            elif text.startswith("/model"):
                name = text.removeprefix("/model").strip()
                if not name:
                    click.echo(f"model: {agent.model.name}; configured: {', '.join(sorted(agent.models))}")
                else:
                    click.secho(f"[model {agent.switch_model(name).name}]", dim=True)
            elif text.startswith("/plan"):
                task = text.removeprefix("/plan").strip()
                if not task:
                    click.echo("usage: /plan TASK")
                    continue
                agent.user_turn(task, images, plan_first=True)
                images = ()
            elif text.startswith("/") and text[1:].split()[0] in strategies:
                strategies[text[1:].split()[0]](agent)  # an extension file's strategy
            elif text.startswith("/"):
                click.echo(f"commands: /plan TASK, /compact, /model NAME{extra}, /quit")
            else:
                agent.user_turn(text, images)
                images = ()
        except NodwynError as exc:
            # A failed request is in the log; the person can go on or /quit and resume later.
            click.secho(f"nodwyn: {exc}", fg="red", err=True)
            agent.settle()
        except KeyboardInterrupt:
            click.secho("\nnodwyn: interrupted; the log keeps everything so far", fg="yellow", err=True)
            agent.settle()
        click.echo()


@click.command()
@_options
def chat(
    model: str | None, workspace: Path | None, yes: bool, images: tuple[Path, ...], recipe: str | None
) -> None:
    """Interactive turns: /plan TASK, /compact, /model NAME, /quit."""
    for path in images:
        read_image(path)
    opened = _open(model, workspace, yes, recipe=recipe)
    agent = opened.agent
    try:
        _chat_loop(opened, images)
    finally:
        _finish(agent)
        opened.close()


@click.command()
@click.argument("session")
@click.argument("task", required=False)
@click.option("--model", "model", default=None, help="Switch to this model entry.")
@click.option("--yes", is_flag=True, help="Allow writes and shell commands without asking.")
@_recipe_option
def resume(session: str, task: str | None, model: str | None, yes: bool, recipe: str | None) -> None:
    """Continue SESSION: run TASK as its next turn, or chat if no TASK is given. It keeps the window
    recipe it last ran with unless --recipe asks for another (e.g. --recipe window-v20)."""
    opened = _open(model, None, yes, resume=session, recipe=recipe)
    agent = opened.agent
    try:
        if task is not None:
            agent.user_turn(task)
        elif sys.stdin.isatty():
            _chat_loop(opened, ())
        else:
            click.echo("nodwyn: no TASK given and no terminal to chat in; pass TASK", err=True)
    finally:
        _finish(agent)
        opened.close()
