"""``nodwyn tui``: the session full-screen, a face over the same library as the CLI.

The end of a resumed session's log is shown first, its tail read by index
(``log.read(first=...)``); then the session is opened by ``compose.setup.open_agent`` (as ``nodwyn
chat`` opens it) on the worker thread, which also counts the whole session's figures with
``stats.totals.Aggregator`` for the cache panel. Each turn, model switch, compaction or strategy
runs on that worker (``bridge.Turns``) while the app draws what the bridge queued, a batch per
tick. No rule of the window, the log or the dialects lives here (ADR 0270).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Footer, Static

from nodwyn.agent import Agent, compact, switch_model
from nodwyn.cli import hold, hold_configured, shown
from nodwyn.compose import Opened, open_agent
from nodwyn.errors import NodwynError, StorageError, did_you_mean
from nodwyn.log import Store, data_root
from nodwyn.stats import Aggregator, overview, percent
from nodwyn.tui.bridge import Answer, Ask, Bridge, Calling, Delta, Events, Notice, Sent, Turns
from nodwyn.tui.composer import Composer
from nodwyn.tui.conversation import Conversation
from nodwyn.tui.panel import CachePanel
from nodwyn.tui.screens import ApprovalScreen, HelpScreen, ModelScreen, Pick, PickerScreen
from nodwyn.values.events import GATE_PLAN, GatePlan, decoded
from nodwyn.values.recipe import WindowLimits

TAIL = 30  # events shown when a session opens (the log's end, read by index); Ctrl+U reads older ones
OLDER = 100  # events Ctrl+U adds above
TICK = 1 / 30  # seconds between draws of what the worker queued
WIDE = 110  # columns from which the cache panel sits beside the conversation
_NO_LIMITS = WindowLimits(high_water=1, low_water=1, max_result_tokens=1, output_reserve=0, ceiling=1)

SLASH: dict[str, str] = {
    "/model": "/model [NAME]: switch model (no NAME: pick one)",
    "/models": "/models: the configured models",
    "/plan": "/plan TASK: plan first (no tools), then do it",
    "/compact": "/compact: replace the conversation with a note",
    "/resume": "/resume [TEXT]: pick a session to resume (TEXT searches)",
    "/help": "/help: keys and commands",
    "/quit": "/quit: leave (also /exit)",
}


class Done:
    """The worker finished its job."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Ready:
    """The session is open: the agent, the session's figures, its latest plan."""

    opened: Opened
    agg: Aggregator
    plan: str | None
    took: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Failed:
    error: NodwynError


class NodwynApp(App[None]):
    TITLE = "nodwyn"
    ENABLE_COMMAND_PALETTE = False
    CSS = """
    Screen { layout: vertical; }
    #status { height: 1; background: $boost; color: $text; padding: 0 1; }
    #plan { height: auto; max-height: 6; border: round $secondary; padding: 0 1; display: none; }
    #plan.shown { display: block; }
    #plan.narrow { max-height: 4; }
    #body { height: 1fr; }
    #body.narrow { layout: vertical; }
    Composer { height: auto; min-height: 3; max-height: 10; border: round $primary; }
    """
    BINDINGS = [
        Binding("f1", "help", "Help"),
        Binding("enter", "noop", "Send", key_display="Enter"),
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+c", "cancel", "Cancel", show=False, priority=True),
        Binding("ctrl+o", "models", "Model"),
        Binding("ctrl+r", "resume", "Resume"),
        Binding("ctrl+b", "toggle_panel", "Cache panel", show=False),
        Binding("ctrl+t", "toggle_thinking", "Thinking", show=False),
        Binding("ctrl+e", "toggle_results", "Results", show=False),
        Binding("ctrl+k", "compact", "Compact", show=False),
        Binding("ctrl+u", "older", "Older", show=False),
        Binding("pageup", "scroll(-1)", "Scroll up", show=False, key_display="PageUp"),
        Binding("pagedown", "scroll(1)", "Scroll down", show=False, key_display="PageDown"),
        Binding("ctrl+q", "leave", "Quit", priority=True),
        Binding("ctrl+d", "leave", "Quit", show=False, priority=True),
    ]
    # What each binding's action does, for the help screen (F1).
    KEY_HELP: dict[str, str] = {
        "help": "this screen: every key and command",
        "noop": "send the message (a /command runs it)",
        "cancel": "cancel the running request or tool (ends its processes)",
        "models": "switch model (a picker of the configured ones)",
        "resume": "resume another session (searchable picker)",
        "toggle_panel": "show or hide the cache panel",
        "toggle_thinking": "expand or collapse every thinking block",
        "toggle_results": "expand or collapse every tool result",
        "compact": "compact the conversation into a note",
        "older": "show 100 older events",
        "scroll(-1)": "scroll the conversation up a page",
        "scroll(1)": "scroll the conversation down a page",
        "leave": "quit (a running turn is cancelled first)",
    }
    # The keys the composer and the dialogs handle themselves.
    MORE_KEYS: list[tuple[str, str]] = [
        ("Ctrl+J / Alt+Enter", "new line in the message"),
        ("Up / Down", "earlier / later messages (first / last line)"),
        ("Tab / Right", "take the completion (/command, @path)"),
        ("Enter / Space", "open or close the focused thinking or result"),
        ("y / a / n", "approval: once / for this session / decline"),
        ("Esc (in a dialog)", "close it (an approval: decline)"),
        ("Ctrl+O / Ctrl+R (in a picker)", "close it and open that picker instead"),
    ]

    def __init__(
        self,
        *,
        env: Mapping[str, str],
        workspace: Path,
        model_name: str | None = None,
        resume: str | None = None,
        yes: bool = False,
        recipe: str | None = None,
        sandbox: str | None = None,
        approval: str | None = None,
        dangerously_no_sandbox: bool = False,
        tail: int = TAIL,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        super().__init__()
        self.clock = clock or (lambda: datetime.now(UTC))  # the picker's ages
        self.env = env
        self.workspace = workspace
        self.model_name = model_name
        self.resume_id = resume
        self.yes = yes
        self.recipe = recipe
        self.sandbox, self.approval, self.no_sandbox = sandbox, approval, dangerously_no_sandbox
        self.tail = tail
        self.bridge = Bridge()
        self.turns = Turns()
        self.opened: Opened | None = None
        self.busy = False
        self._quitting = False
        self._thread: threading.Thread | None = None
        self._picks: dict[tuple[str, int], Pick] = {}
        self.shown_in: float | None = None  # seconds to read and lay out the log's end (bench)
        self.shown_at: float | None = None  # perf_counter() when the frame showing it was drawn
        self.opened_in: float | None = None  # seconds until the session was open for turns
        self.failed: NodwynError | None = None  # why the session could not be opened

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static("", id="status")
        yield Static("", id="plan")
        with Horizontal(id="body"):
            yield Conversation(id="conversation")
            yield CachePanel(_NO_LIMITS, 1, id="panel")
        yield Composer(self._commands, lambda: self.workspace, id="composer")
        yield Footer()

    @property
    def conversation(self) -> Conversation:
        return self.query_one(Conversation)

    @property
    def panel(self) -> CachePanel:
        return self.query_one(CachePanel)

    @property
    def agent(self) -> Agent:
        assert self.opened is not None, "no session is open"
        return self.opened.agent

    def on_mount(self) -> None:
        self._layout(self.size.width)
        self.set_interval(TICK, self.drain)
        try:
            self.open_session(self.resume_id)
        except NodwynError as exc:  # an unknown or unreadable session: one line, from the command
            self.failed = exc
            self.exit(return_code=exc.exit_code)
            return
        self.query_one(Composer).focus()

    def on_resize(self, event: Any) -> None:
        self._layout(event.size.width)

    def _layout(self, width: int) -> None:
        narrow = width < WIDE
        self.query_one("#body").set_class(narrow, "narrow")
        self.panel.set_class(narrow, "bottom")
        self.query_one("#plan").set_class(narrow, "narrow")

    # -- opening -----------------------------------------------------------------------------

    def open_session(self, resume: str | None) -> None:
        """Show the end of the session's log at once (its tail, read by index by a reader of its
        own), then open the session on the worker thread: a resume rebuilds the window from the
        log's start point, which on a long session takes longer than a glance (ADR 0270)."""
        started = time.perf_counter()
        hold_configured(self.env)  # no config yet: the shapes only, until it opens
        seen = 0
        if resume is not None:
            store = Store(data_root(self.env))
            resume = store.resolve(resume)
            with store.open(resume) as reader:
                last = reader.last_seq
                tail = list(reader.read(max(1, last - self.tail + 1))) if last else []
            seen = tail[-1].seq if tail else 0
            self.panel.reset(self.panel.limits, tail[0].seq if tail else 1)
            self.panel.feed(tail)
            self.conversation.add(tail)
            self._show_plan(self.conversation.plan)
            self.conversation.scroll_end(animate=False, immediate=True)
        self.bridge.seen = seen
        self.shown_in = time.perf_counter() - started
        self.busy = True
        self._status()
        self.call_after_refresh(self._drawn)
        # after the first frame: the resume's work would otherwise share the first paint's time
        self.call_after_refresh(self._open, resume, seen, started)

    def _drawn(self) -> None:
        self.shown_at = time.perf_counter()

    @work(thread=True, group="agent", exit_on_error=False)
    def _open(self, resume: str | None, seen: int, started: float) -> None:
        bridge = self.bridge
        try:
            opened = open_agent(
                env=self.env,
                workspace=self.workspace,
                model_name=self.model_name if self.opened_in is None else None,  # -m: the first only
                resume=resume,
                yes=self.yes,
                ask=bridge.ask,
                display=bridge,
                recipe_version=self.recipe,
                always_ask=True,
                sandbox=self.sandbox,
                approval=self.approval,
                dangerously_no_sandbox=self.no_sandbox,
            )
        except NodwynError as exc:
            bridge.put(Failed(error=exc))
            return
        except OSError as exc:  # what the library did not turn into a StorageError
            bridge.put(
                Failed(error=StorageError(f"the system refused: {exc}; check the file named and retry"))
            )
            return
        log = opened.agent.log
        hold(log.known)
        bridge.attach(log, seen, opened.agent)
        bridge.finish()  # what the resume appended (session.resume, calls an interruption left)
        # The whole session's figures and its plan, counted here, off the screen's thread.
        agg = Aggregator()
        plan: str | None = None
        for event in log.read(1, bridge.seen):
            agg.feed(event)
            p = decoded(event, GATE_PLAN)
            if isinstance(p, GatePlan):
                plan = p.text
        bridge.put(Ready(opened=opened, agg=agg, plan=plan, took=time.perf_counter() - started))

    def _show_plan(self, plan: str | None) -> None:
        widget = self.query_one("#plan", Static)
        if plan:
            widget.update(Text("plan: " + shown(plan.strip())))
        widget.set_class(bool(plan), "shown")

    def _status(self) -> None:
        if self.opened is None:
            self.query_one("#status", Static).update(Text("opening the session…"))
            return
        agent = self.agent
        priced = agent.model.prices is not None
        if priced != self.panel.priced:
            self.panel.priced = priced
            self.panel.refresh_figures()
        state = "working… Esc cancels" if self.busy else "ready"
        totals = self.panel.agg.totals().all
        text = (
            f"{agent.session_id} · {agent.model.name} · window-v{agent.settings.recipe.version}"
            f" · cached {percent(totals.cache_rate)} · {state}"
            f" · sandbox {agent.settings.sandbox.mode} · {self.opened.approval}"
        )
        self.query_one("#status", Static).update(Text(shown(text, newlines=False)))

    # -- the worker ----------------------------------------------------------------------------

    def _commands(self) -> list[str]:
        extra = [] if self.opened is None else [f"/{n}" for n in sorted(self.opened.extensions.strategies)]
        return [*SLASH, "/exit", *extra]

    def start(self, job: Callable[[Agent], object], what: str) -> bool:
        """Run ``job(agent)`` on the worker thread; refused while another runs."""
        if self.opened is None:
            self.conversation.notice(f"{what}: the session is still opening")
            return False
        if self.busy:
            self.conversation.notice(f"{what}: a turn is running; Esc cancels it")
            return False
        self.busy = True
        self._status()
        self._work(job)
        return True

    @work(thread=True, group="agent", exit_on_error=False)
    def _work(self, job: Callable[[Agent], object]) -> None:
        agent = self.agent
        self._thread = threading.current_thread()
        try:
            try:
                self.turns.enter()
                job(agent)
            finally:
                self.turns.leave()
        except KeyboardInterrupt:
            self.bridge.notice("interrupted; the log keeps everything so far")
            agent.settle()
        except NodwynError as exc:
            self.bridge.notice(str(exc))
            agent.settle()
        finally:
            self.bridge.finish()
            self.bridge.put(Done())

    def drain(self) -> None:
        """Draw what the worker queued since the last tick, as one batch."""
        items = self.bridge.drain()
        if not items:
            return
        text: dict[str, list[str]] = {}
        order: list[str] = []

        def flush_text() -> None:
            for kind in order:
                self.conversation.stream(kind, "".join(text[kind]))
            text.clear()
            order.clear()

        for item in items:
            if isinstance(item, Delta):
                if item.kind not in text:
                    order.append(item.kind)
                text.setdefault(item.kind, []).append(item.text)
                continue
            flush_text()
            self._take(item)
        flush_text()
        self._status()

    def _take(self, item: object) -> None:
        if isinstance(item, Events):
            plan = self.conversation.add(item.events)
            self.panel.feed(item.events)
            if plan is not None:
                self._show_plan(plan)
        elif isinstance(item, Sent):
            self.conversation.sent(item.req, item.results)
        elif isinstance(item, Calling):
            self.conversation.calling(item.ctx, item.call)
        elif isinstance(item, Notice):
            self.conversation.notice(item.text)
        elif isinstance(item, Ask):
            answer = item.answer

            def decided(choice: Answer | None) -> None:
                if not answer.done():
                    answer.set_result(choice or "decline")

            self.push_screen(ApprovalScreen(item.tool, item.what, item.call, item.where), decided)
        elif isinstance(item, Ready):
            self.opened = item.opened
            self.workspace = item.opened.agent.settings.workspace
            self.opened_in = item.took
            self.panel.adopt(item.agg, item.opened.agent.settings.recipe.limits)
            if item.plan is not None and self.conversation.plan is None:
                self._show_plan(item.plan)
            self.busy = False
        elif isinstance(item, Failed):
            self.failed = item.error
            self.exit(return_code=item.error.exit_code)
        elif isinstance(item, Done):
            self.busy = False
            self.conversation.end_stream()
            if self._quitting:
                self.exit()

    # -- what the person does -------------------------------------------------------------------

    def on_composer_submitted(self, message: Composer.Submitted) -> None:
        self.submit(message.text)

    def submit(self, line: str) -> None:
        text = line.strip()
        if not text:
            return
        if not text.startswith("/"):
            self.start(lambda agent: agent.user_turn(line.rstrip("\n")), "message")
            return
        name, _, arg = text.partition(" ")
        arg = arg.strip()
        strategies = {} if self.opened is None else self.opened.extensions.strategies
        match name:
            case "/quit" | "/exit":
                self.action_leave()
            case "/help":
                self.action_help()
            case "/model" if arg:
                self.switch(arg)
            case "/model":
                self.action_models()
            case "/models":
                current = self.agent.model.name
                listed = (("*" if m == current else "") + m for m in sorted(self.agent.settings.models))
                self.conversation.notice(f"models: {', '.join(listed)}")
            case "/plan" if not arg:
                self.conversation.notice("usage: /plan TASK")
            case "/plan":
                self.start(lambda agent: agent.user_turn(arg, plan_first=True), "/plan")
            case "/compact":
                self.action_compact()
            case "/resume":
                self.action_resume(arg)
            case _ if name[1:] in strategies:
                strategy = strategies[name[1:]]
                self.start(lambda agent: strategy(agent), name)
            case _:
                hint = did_you_mean(name, self._commands())
                self.conversation.notice(f"unknown command {name}{hint}; F1 lists them")

    def switch(self, name: str) -> None:
        self.start(lambda agent: switch_model(agent, name), "/model")

    def action_noop(self) -> None:
        pass

    def action_cancel(self) -> None:
        """Esc / Ctrl-C: stop the running request or tool; the app stays."""
        if not self.busy:
            return
        self.bridge.decline_pending()
        if self.turns.interrupt():
            self.conversation.notice("cancelling…")

    def action_models(self) -> None:
        models = sorted(self.agent.settings.models)

        def picked(name: str | None) -> None:
            if name and name != self.agent.model.name:
                self.switch(name)

        self.push_screen(ModelScreen(models, self.agent.model.name), picked)

    def action_compact(self) -> None:
        self.start(compact, "/compact")

    def action_toggle_panel(self) -> None:
        self.panel.display = not self.panel.display

    def action_toggle_thinking(self) -> None:
        self.conversation.toggle("think")

    def action_toggle_results(self) -> None:
        self.conversation.toggle("tool")

    def action_older(self) -> None:
        """Show the 100 events before the first one shown, read by index by a reader of its own."""
        first = self.conversation.first_seq
        if self.opened is None or first is None or first <= 1:
            return
        store = Store(data_root(self.env))
        with store.open(self.agent.session_id) as reader:
            older = list(reader.read(max(1, first - OLDER), first - 1))
        self.conversation.prepend(older)

    def action_scroll(self, pages: int) -> None:
        conv = self.conversation
        if pages < 0:
            conv.scroll_page_up()
        else:
            conv.scroll_page_down()

    def key_help(self) -> list[tuple[str, str]]:
        """Every binding of the app (keys joined by action), then the composer's and dialogs'."""
        by_action: dict[str, list[str]] = {}
        for b in self.BINDINGS:
            assert isinstance(b, Binding)
            by_action.setdefault(b.action, []).append(b.key_display or _keys(b.key))
        rows = [(" / ".join(keys), self.KEY_HELP[action]) for action, keys in by_action.items()]
        return rows + self.MORE_KEYS

    def action_help(self) -> None:
        keys = self.key_help()
        commands = [(c, SLASH[c].split(": ", 1)[1]) for c in SLASH]
        if self.opened is not None:
            commands += [
                (f"/{n}", "a strategy from an extension file")
                for n in sorted(self.opened.extensions.strategies)
            ]
        self.push_screen(HelpScreen(keys, commands))

    async def action_quit(self) -> None:
        self.action_leave()

    def action_leave(self) -> None:
        """Quit; a running turn is cancelled first and the app ends when it has stopped."""
        if self.busy:
            self._quitting = True
            self.action_cancel()
            return
        self.exit()

    # -- resume ------------------------------------------------------------------------------

    def action_resume(self, query: str = "") -> None:
        """The picker at once, its search ``query`` (empty from Ctrl+R and a bare ``/resume``);
        the sessions are read on a worker and listed when they are in."""
        if self.busy:
            self.conversation.notice("resume: a turn is running; Esc cancels it")
            return
        screen = PickerScreen(self.clock(), query=query)

        def picked(session: str | None) -> None:
            if session:
                self.resume_session(session)

        self.push_screen(screen, picked)
        self._gather_picks(screen)

    @work(thread=True, group="picker", exclusive=True, exit_on_error=False)
    def _gather_picks(self, screen: PickerScreen) -> None:
        picks = self.picks()
        self.call_from_thread(screen.show, picks)

    def picks(self) -> list[Pick]:
        """Every session of the store, newest first; a session's overview is kept while its log
        does not grow."""
        store = Store(data_root(self.env))
        out: list[Pick] = []
        current = None if self.opened is None else self.agent.session_id
        for info in reversed(store.list()):
            if info.id == current or info.error:
                continue
            key = (info.id, info.size)
            pick = self._picks.get(key)
            if pick is None:
                try:
                    with store.open(info.id) as log:
                        view = overview(log.read(1))
                except NodwynError:
                    continue
                pick = self._picks[key] = Pick(
                    id=info.id,
                    first_message=view.first_message,
                    model=view.model,
                    last=info.last,
                    cache_share="-" if not view.figures.requests else percent(view.figures.cached_share),
                )
            out.append(pick)
        return out

    def resume_session(self, session: str) -> None:
        """Close this session and open ``session`` from its log, showing its end."""
        if self.busy:
            return
        if self.opened is not None:
            self.opened.close()
            self.opened = None
        self.bridge = Bridge()
        self.conversation.reset()
        self.open_session(session)

    # -- closing ---------------------------------------------------------------------------

    def on_unmount(self) -> None:
        if self.busy:
            self.bridge.decline_pending()
            self.turns.interrupt()
            if self._thread is not None:
                self._thread.join(5)
        if self.opened is not None:
            self.opened.close()
            self.opened = None


def _keys(key: str) -> str:
    return " / ".join(k.replace("ctrl+", "Ctrl+").replace("escape", "Esc").title() for k in key.split(","))
