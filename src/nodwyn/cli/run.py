"""``nodwyn run``, ``nodwyn chat`` and ``nodwyn resume``: sessions in the terminal.

Streams (ADR 0180): the answer goes to stdout; progress and figures (``[session …]``,
``[request …]``, ``[reply …]``, tool lines, the final figures line) go to stderr. When stdout is a
terminal the answer streams there as it comes; otherwise (a pipe, a file) the reply text streams
to stderr as progress and only the turn's final answer is written to stdout. ``--quiet`` drops the
progress, ``--json`` prints one JSON object instead of the answer.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Literal

import click
import orjson
from click.globals import resolve_color_default

from nodwyn.agent import MODES, STOPPED_EXIT, Agent, Outcome, TurnResult, compact, read_image, switch_model
from nodwyn.cli.common import SESSION
from nodwyn.cli.complete import complete_models
from nodwyn.cli.jsonl import JsonLines
from nodwyn.cli.screen import Stream, approval_lines, hold, redacted, shown
from nodwyn.compose import APPROVALS, Opened, open_agent
from nodwyn.errors import NodwynError
from nodwyn.stats import cache_figures, cost_text, describe, figures_json, percent
from nodwyn.values.content import ToolCall
from nodwyn.values.events import Event, LlmReq, Note
from nodwyn.values.recipe import DEFAULT_VERSION
from nodwyn.values.request import Response

WAIT_TICK = 1.0  # seconds between updates of the waiting line


def _err(text: str, *, nl: bool = True, **style: Any) -> None:
    click.secho(text, nl=nl, err=True, **style)


class StatusLine:
    """``waiting for the model… 12 s`` on stderr while a request has produced nothing yet; only on
    a terminal, redrawn in place and erased when the first fragment (or the reply) arrives. It is
    drawn from its own thread, so it writes to the terminal itself (click's context, which knows
    NO_COLOR, belongs to the main thread)."""

    ERASE = "\r\x1b[2K"  # to the line's start, clear it: cursor control, not colour

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.styled = resolve_color_default() is not False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _write(self, text: str) -> None:
        sys.stderr.write(text)
        sys.stderr.flush()

    def start(self) -> None:
        if not self.enabled or self._thread is not None:
            return
        self._stop.clear()
        started = time.monotonic()

        def draw() -> None:
            text = f"waiting for the model… {int(time.monotonic() - started)} s"
            self._write(self.ERASE + (click.style(text, dim=True) if self.styled else text))

        def tick() -> None:
            while not self._stop.wait(WAIT_TICK):
                with self._lock:
                    if self._stop.is_set():
                        return
                    draw()

        draw()  # at once, however soon the reply comes

        self._thread = threading.Thread(target=tick, name="nodwyn-status", daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread is not None

    def stop(self) -> None:
        if self._thread is None:
            return
        with self._lock:
            self._stop.set()
            self._write(self.ERASE)
        self._thread.join()
        self._thread = None


class LineDisplay:
    """Line mode: the reply as it streams, one line per tool call and result, one per request and
    reply; the answer on stdout, the rest on stderr (see the module's docstring)."""

    def __init__(self, *, answer_live: bool, progress: bool, status: bool, answer: bool = True) -> None:
        self.answer_live = answer_live  # the reply text streams to stdout (a terminal)
        self.answer_out = answer  # the turn's answer goes to stdout (not with --json)
        self.progress = progress
        self.status = StatusLine(status and progress)
        self._open_out = False
        self._open_err = False
        self._streams: dict[str, Stream] = {}
        self._reply: list[str] = []  # the text of the reply streaming now, as it came

    def interrupted(self) -> str:
        """Ctrl-C mid-reply: end the open line, drop what was held back (so it is not shown at the
        start of the next turn), and return the reply's text so far."""
        self.status.stop()
        self._streams.clear()
        self._end_lines()
        text, self._reply = "".join(self._reply), []
        return text

    def _end_lines(self) -> None:
        for kind in list(self._streams):
            self._emit(kind, self._streams.pop(kind).flush())
        if self._open_out:
            click.echo()
            self._open_out = False
        if self._open_err:
            click.echo(err=True)
            self._open_err = False

    def _emit(self, kind: str, text: str) -> None:
        if not text:
            return
        if kind == "text" and self.answer_live:
            click.echo(text, nl=False)
            self._open_out = not text.endswith("\n")
        else:
            _err(text, nl=False, dim=kind != "text")
            self._open_err = not text.endswith("\n")

    def delta(self, kind: str, fragment: str) -> None:
        """A piece of the reply, shown a whole line at a time, redacted and escaped (screen.Stream)."""
        self.status.stop()
        if kind == "text":
            self._reply.append(fragment)
        if not (kind == "text" and self.answer_live) and not self.progress:
            return
        for other in [k for k in self._streams if k != kind]:  # keep the order text and thinking came in
            self._emit(other, self._streams.pop(other).flush())
        self._emit(kind, self._streams.setdefault(kind, Stream()).feed(fragment))

    def request(self, event: Event) -> None:
        self._reply = []
        if self.progress:
            self._end_lines()
            req = LlmReq.from_data(event.data)
            extra = []
            if req.trim:
                extra.append(f"trim, elided {len(req.elided)}")
            if req.no_tools:
                extra.append("no tools")
            if req.offered_tools:
                extra.append("tools: " + ",".join(req.offered_tools))
            tail = f" ({'; '.join(extra)})" if extra else ""
            _err(f"[request {event.seq} in {event.ctx}, ~{req.estimate} tokens{tail}]", dim=True)
        self.status.start()

    def response(self, event: Event, response: Response) -> None:
        self.status.stop()
        self._end_lines()
        if not self.progress:
            return
        u = response.usage
        cached = "?" if u.cached_tokens is None else f"{u.cached_tokens:,}"
        prompt = "?" if u.prompt_tokens is None else f"{u.prompt_tokens:,}"
        ms = response.timings.prefill_ms
        timing = "" if ms is None else f", prefill {ms:,.0f} ms"
        _err(f"[reply {event.seq}: {cached} of {prompt} prompt tokens cached{timing}]", dim=True)

    def tool_call(self, ctx: str, call: ToolCall) -> None:
        if self.progress:
            self._end_lines()
            args = shown(call.arguments, newlines=False)
            args = args if len(args) <= 200 else args[:200] + "…"  # the approval prompt shows it whole
            _err(f"→ {shown(call.name)} {args}", fg="cyan")

    def tool_result(self, ctx: str, call: ToolCall, outcome: Outcome) -> None:
        if not self.progress:
            return
        text = redacted(outcome.text)  # before any cut: half a key is still a key
        first = shown(text.strip().splitlines()[0], newlines=False) if text.strip() else ""
        lines = outcome.text.count("\n") + 1
        if outcome.error:
            _err(f"  ✗ {first[:300]}", fg="red")
        else:
            _err(f"  ✓ {lines} lines" + (f": {first[:100]}" if first else ""), dim=True)

    def notice(self, text: str) -> None:
        waiting = self.status.running  # a retry's notice comes while the request waits
        self.status.stop()
        self._end_lines()
        _err(f"nodwyn: {shown(text)}", fg="yellow")
        if waiting:
            self.status.start()

    def answer(self, result: TurnResult) -> None:
        """After a turn: the final answer on stdout, unless it already streamed there."""
        self.status.stop()
        if self.answer_live:
            self._end_lines()
        elif result.text and self.answer_out:
            self._end_lines()
            click.echo(shown(result.text.rstrip("\n")))
        if result.cut_at is not None and (self.answer_live or self.answer_out):
            click.echo(f"[reply cut at {result.cut_at} output tokens]")  # on its own line


def _ask(tool: str, what: str, where: str | None) -> bool:
    """The approval prompt: the whole command, folded to the terminal's width, with its length and
    the sandbox it runs in; credentials redacted, every control character spelled out and every
    blank run counted (``screen.approval_lines``), so neither a ``\\r``, ``ESC [2K`` nor 3,000
    spaces can hide what runs; the question repeats the command's start."""
    import shutil

    lines, question = approval_lines(tool, what, where, shutil.get_terminal_size().columns)
    for line in lines:
        click.echo(line, err=True)
    return click.confirm(question, default=False, err=True)


def _end_on_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


class Output:
    """How a command prints: ``--quiet``, ``--json``, and whether stdout/stderr are terminals."""

    def __init__(self, *, quiet: bool = False, as_json: bool = False, jsonl: bool = False) -> None:
        self.quiet = quiet
        self.as_json = as_json or jsonl
        self.jsonl: JsonLines | None = JsonLines() if jsonl else None
        self.display: LineDisplay | JsonLines = self.jsonl or LineDisplay(
            answer_live=sys.stdout.isatty() and not as_json,
            progress=not quiet,
            status=sys.stderr.isatty(),
            answer=not as_json,
        )

    def info(self, text: str) -> None:
        if not self.quiet and self.jsonl is None:
            _err(shown(text), dim=True)

    def turn_line(self, agent: Agent, before: int) -> None:
        """The turn's figures and cost, after each chat turn."""
        if self.quiet:
            return
        f = cache_figures(agent.log.read(agent.first_seq), after=before)
        if f.requests:
            share = "cache: not reported" if f.cached_share is None else f"cached {percent(f.cached_share)}"
            n = f"{f.requests} request" + ("" if f.requests == 1 else "s")
            _err(f"[turn: {n}, {share}, cost {cost_text(f)}]", dim=True)

    def finish(self, agent: Agent, result: TurnResult | None = None, before: int = 0) -> None:
        """The answer as JSON, or the session's figures line: over the events the agent holds (all
        of them, or for a session resumed from a start point past its first event, those from
        there on: ADR 0114)."""
        figures = cache_figures(agent.log.read(agent.first_seq))
        if self.as_json:
            turn = cache_figures(agent.log.read(agent.first_seq), after=before)
            doc: dict[str, Any] = {
                "session": agent.session_id,
                "model": agent.model.name,
                "text": None if result is None else redacted(result.text),
                "stopped": None if result is None else result.stopped,
                "why": None if result is None else result.why,
                "exit": 0 if result is None or not result.stopped else STOPPED_EXIT.get(result.stopped, 1),
                **figures_json(figures),
                "turn": figures_json(turn),
            }
            if self.jsonl is not None:
                self.jsonl.result(doc)
            else:
                click.echo(orjson.dumps(doc).decode())
        elif not self.quiet:
            since = (
                f" (from seq {agent.first_seq}, where the resumed window starts)"
                if agent.first_seq > 1
                else ""
            )
            _err(f"session {agent.session_id}: {describe(figures)}{since}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    """The options every session command takes (``_session_options``), and a new session's
    (``_new_options``: ``--workspace``, ``--image``, ``--continue``)."""

    model: str | None
    yes: bool
    quiet: bool
    as_json: bool
    recipe: str | None
    approval: str | None
    sandbox: str | None
    no_sandbox: bool  # --dangerously-no-sandbox
    no_project_doc: bool
    workspace: Path | None = None
    images: tuple[Path, ...] = ()
    cont: bool = False


def _open(opts: Options, out: Output, resume: str | None = None, task: str | None = None) -> Opened:
    # SIGTERM and SIGHUP (the terminal closed) end the session as Ctrl-C does: through the
    # `finally` that kills what its shell commands left running and releases the log.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _end_on_signal)
    opened = open_agent(
        env=os.environ,
        workspace=opts.workspace or Path.cwd(),
        model_name=opts.model,
        resume=resume,
        yes=opts.yes,
        ask=_ask,
        display=out.display,
        recipe_version=opts.recipe,
        task=task,
        sandbox=opts.sandbox,
        approval=opts.approval,
        dangerously_no_sandbox=opts.no_sandbox,
        project_doc=not opts.no_project_doc,
        images=len(opts.images),
    )
    agent = opened.agent
    hold(agent.log.known)  # what the screen clears of credentials from here on
    facts = {
        "session": agent.session_id,
        "model": agent.model.name,
        "recipe": f"window-v{agent.settings.recipe.version}",
        "workspace": str(agent.settings.workspace),
        "sandbox": agent.settings.sandbox.describe(),
        "approval": opened.approval,
    }
    if out.jsonl is not None:
        out.jsonl.last_seq = lambda: agent.log.last_seq
        out.jsonl.session(**facts)
    out.info("[" + " · ".join(v if k == "recipe" else f"{k} {v}" for k, v in facts.items()) + "]")
    if opened.project_doc is not None:
        out.info(f"[{opened.project_doc.banner()}]")
    if opened.servers is not None and opened.servers.started:
        up = [s for s in opened.servers.started if s.error is None]
        count = {
            s.server.name: sum(t.startswith(f"mcp__{s.server.name}__") for t in opened.servers.tools)
            for s in up
        }
        names = ", ".join(f"{n} ({c} tools)" for n, c in count.items()) or "none started"
        out.info(f"[mcp: {names}]")
    return opened


def _task(task: str | None) -> str | None:
    """The task: ``-`` (or none) reads it from a pipe; otherwise a pipe's text is context, placed
    before the task (as ``cat notes.txt | nodwyn run "summarise"`` means)."""
    piped = None if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()  # a pipe's or file's
    if task is None or task == "-":
        if piped is None or not piped.strip():
            return None
        return piped.strip("\n")
    if piped is not None and piped.strip():
        return f"{piped.rstrip()}\n\n{task}"
    return task


def _gathered(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f`` called with its session options gathered into one ``opts`` (``Options``)."""
    names = set(Options.__dataclass_fields__)

    @functools.wraps(f)
    def call(**kwargs: Any) -> Any:
        given = {k: kwargs.pop(k) for k in names & kwargs.keys()}
        return f(opts=Options(**given), **kwargs)

    return call


def _session_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = _gathered(f)
    f = click.option(
        "--recipe",
        "recipe",
        default=None,
        metavar="window-vN",
        help=f"The window recipe (default: window-v{DEFAULT_VERSION} for a new session, its own on resume).",
    )(f)
    f = click.option(
        "--json", "as_json", is_flag=True, help="Print one JSON object (answer, session, figures, cost)."
    )(f)
    f = click.option("-q", "--quiet", is_flag=True, help="Print only the answer (no progress on stderr).")(f)
    f = click.option(
        "--dangerously-no-sandbox",
        "no_sandbox",
        is_flag=True,
        help="Allow --yes (full-auto) with --sandbox off: every command runs as you without asking.",
    )(f)
    f = click.option(
        "--sandbox",
        "sandbox",
        type=click.Choice(MODES),
        default=None,
        help="Where shell commands run (default: [tools] sandbox, else workspace-write).",
    )(f)
    f = click.option(
        "--approval",
        "approval",
        type=click.Choice(APPROVALS),
        default=None,
        help="What asks first: ask (writes, commands), auto-edit (commands), full-auto (nothing).",
    )(f)
    f = click.option(
        "--yes", is_flag=True, help="Allow writes and shell commands without asking (full-auto)."
    )(f)
    f = click.option(
        "--no-project-doc", is_flag=True, help="Leave AGENTS.md (or CLAUDE.md) out of the system prompt."
    )(f)
    f = click.option(
        "-m",
        "--model",
        "model",
        default=None,
        shell_complete=complete_models,
        help="A [models.NAME] entry (default: [control] model; `nodwyn models default NAME` sets it).",
    )(f)
    return f


def _new_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = _session_options(f)  # gathers these three too
    f = click.option(
        "-c", "--continue", "cont", is_flag=True, help="Continue the latest session instead of a new one."
    )(f)
    f = click.option(
        "--workspace",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="The directory the tools work in (default: the current directory).",
    )(f)
    f = click.option(
        "--image",
        "images",
        multiple=True,
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="Attach an image.",
    )(f)
    return f


def _one_turn(opened: Opened, task: str, images: tuple[Path, ...], out: Output) -> None:
    agent = opened.agent
    before = agent.log.last_seq
    result: TurnResult | None = None
    try:
        result = agent.user_turn(task, images)
        out.display.answer(result)
    finally:
        out.finish(agent, result, before)
        opened.close()
    if result.stopped:  # its one line (the agent's notice) is on stderr; the code says which end
        raise SystemExit(STOPPED_EXIT.get(result.stopped, 1))


@click.command()
@click.argument("task", required=False)
@_new_options
@click.option(
    "--jsonl",
    is_flag=True,
    help="Print the run as JSON Lines while it happens (docs/jsonl.md); the last line is --json's object.",
)
def run(task: str | None, jsonl: bool, opts: Options) -> None:
    """Run one task (one turn): the answer on stdout, progress and figures on stderr.

    TASK `-` (or no TASK) reads the task from stdin; with a TASK, piped input is context for it.
    """
    text = _task(task)
    if text is None:
        raise click.UsageError("no TASK: give one, or `-` with the task on stdin")
    for path in opts.images:
        read_image(path)  # a bad image is refused before a session starts
    out = Output(quiet=opts.quiet, as_json=opts.as_json, jsonl=jsonl)
    opened = _open(opts, out, resume="latest" if opts.cont else None, task=text)
    _one_turn(opened, text, opts.images, out)


SLASH = {
    "plan": "/plan TASK: plan first (no tools), then do it",
    "compact": "/compact: replace the conversation with a note",
    "model": "/model [NAME]: show or switch the model",
    "models": "/models: the configured models",
    "help": "/help: these commands",
    "quit": "/quit (or /exit, Ctrl-D): end the chat",
    "exit": "",
}


def _reader(opened: Opened) -> Callable[[], str]:
    """A line reader: prompt_toolkit's editor and history on a terminal, plain lines otherwise.
    Raises EOFError at the end (Ctrl-D)."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):

        def plain() -> str:
            line = sys.stdin.readline()
            if not line:
                raise EOFError
            return line

        return plain
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import WordCompleter

    from nodwyn.cli.history import HISTORY_NAME, RedactedHistory
    from nodwyn.cli.screen import held
    from nodwyn.log import data_root

    history = RedactedHistory(data_root(os.environ) / HISTORY_NAME, held())
    words = [f"/{name}" for name in SLASH] + [f"/{name}" for name in opened.extensions.strategies]
    session: PromptSession[str] = PromptSession(
        history=history,
        completer=WordCompleter(words, sentence=True),
        complete_while_typing=False,
    )

    def edited() -> str:
        while True:
            try:
                return session.prompt("you> ")
            except KeyboardInterrupt:  # Ctrl-C at the prompt clears the line, as a shell does
                continue

    return edited


def _chat_loop(opened: Opened, first_images: tuple[Path, ...], out: Output) -> None:
    """Chat until /quit or the end of input; then the session's figures, and the session closed."""
    try:
        chat = _Chat(opened, first_images, out)
        extra = "".join(f", /{name}" for name in sorted(chat.strategies))
        out.info(f"chat: type a message; /plan TASK, /compact, /model NAME, /models{extra}, /help, /quit")
        read = _reader(opened)
        while True:
            try:
                line = read()
            except (EOFError, click.exceptions.Abort):
                break
            text = line.strip()
            if not text:
                continue
            before = chat.agent.log.last_seq
            step = chat.line(text)
            if step == "quit":
                break
            if step == "done":
                out.turn_line(chat.agent, before)
    finally:
        out.finish(opened.agent)
        opened.close()


_Step = Literal["done", "skip", "quit"]  # skip: nothing was asked, so no turn line


class _Chat:
    """One chat: a line is a message to the agent or a slash command; the first message carries
    the images given on the command line."""

    def __init__(self, opened: Opened, first_images: tuple[Path, ...], out: Output) -> None:
        self.agent = opened.agent
        self.out = out
        assert isinstance(out.display, LineDisplay)  # a chat has no --jsonl
        self.display = out.display
        self.images = first_images
        self.strategies = opened.extensions.strategies
        self.commands = [f"/{c}" for c in SLASH if c != "exit"] + [f"/{s}" for s in sorted(self.strategies)]
        self.built_in: dict[str, Callable[[str], _Step]] = {
            "compact": self.compact,
            "model": self.model,
            "models": self.models,
            "plan": self.plan,
        }

    def line(self, text: str) -> _Step:
        try:
            if text.startswith("/"):
                name, _, arg = text[1:].partition(" ")
                return self.command(name, arg.strip())
            self.display.answer(self.agent.user_turn(text, self.images))
            self.images = ()
        except NodwynError as exc:
            # A failed request is in the log; the person can go on or /quit and resume later.
            self.display.status.stop()
            _err(f"nodwyn: {shown(str(exc))}", fg="red")
            self.agent.settle()
        except KeyboardInterrupt:
            partial = self.display.interrupted()
            _err("\nnodwyn: interrupted; the log keeps everything so far", fg="yellow")
            self.agent.settle()
            if partial:
                self.agent.append(Note(text=f"reply interrupted by the person; its text so far: {partial}"))
        return "done"

    def command(self, name: str, arg: str) -> _Step:
        """A slash command: the built-in ones, then an extension file's strategies, then /help."""
        if name in ("quit", "exit"):
            return "quit"
        if name in self.built_in:
            return self.built_in[name](arg)
        if name in self.strategies:
            self.strategies[name](self.agent)
            return "done"
        if name == "help":
            for c in self.commands:
                click.echo(SLASH.get(c[1:]) or c)
            return "done"
        from nodwyn.errors import did_you_mean

        hint = did_you_mean(f"/{name}", self.commands)
        _err(f"nodwyn: unknown command /{name}{hint}; commands: {', '.join(self.commands)}", fg="red")
        return "skip"

    def compact(self, arg: str) -> _Step:
        note = compact(self.agent)
        self.out.info(f"[compacted; the note is {len(note)} characters]")
        return "done"

    def model(self, arg: str) -> _Step:
        if not arg:
            known = ", ".join(sorted(self.agent.settings.models))
            click.echo(f"model: {self.agent.model.name}; configured: {known}")
        else:
            self.out.info(f"[model {switch_model(self.agent, arg).name}]")
        return "done"

    def models(self, arg: str) -> _Step:
        for m in sorted(self.agent.settings.models):
            mark = "*" if m == self.agent.model.name else " "
            click.echo(f"{mark} {m}")
        return "done"

    def plan(self, arg: str) -> _Step:
        if not arg:
            _err("usage: /plan TASK")
            return "skip"
        self.display.answer(self.agent.user_turn(arg, self.images, plan_first=True))
        self.images = ()
        return "done"


@click.command()
@_new_options
def chat(opts: Options) -> None:
    """Interactive turns with line editing and history: /plan TASK, /compact, /model NAME, /models,
    /help, /quit."""
    for path in opts.images:
        read_image(path)
    out = Output(quiet=opts.quiet, as_json=opts.as_json)
    _chat_loop(_open(opts, out, resume="latest" if opts.cont else None), opts.images, out)


@click.command()
@SESSION
@click.argument("task", required=False)
@_session_options
def resume(session: str, task: str | None, opts: Options) -> None:
    """Continue SESSION (an id, its random suffix, a unique prefix, or latest/last): run TASK as its
    next turn (`-` reads it from stdin), or chat if no TASK is given on a terminal. It keeps the
    window recipe it last ran with unless --recipe asks for another (e.g. --recipe window-v20)."""
    text = _task(task) if task is not None or not sys.stdin.isatty() else None
    out = Output(quiet=opts.quiet, as_json=opts.as_json)
    if text is None and not sys.stdin.isatty():
        raise click.UsageError("no TASK given and no terminal to chat in; pass TASK or pipe it with `-`")
    opened = _open(opts, out, resume=session, task=text)
    if text is not None:
        _one_turn(opened, text, (), out)
    else:
        _chat_loop(opened, (), out)
