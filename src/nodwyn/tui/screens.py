"""The modal screens: an approval (the whole command or diff), the session picker (searchable),
the model picker, and the help screen listing every key binding."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, OptionList, Static
from textual.widgets.option_list import Option

from nodwyn.cli import shown
from nodwyn.tui.bridge import Answer
from nodwyn.values.arguments import ArgumentsError, load_arguments
from nodwyn.values.content import ToolCall


def _arguments(call: ToolCall | None) -> dict[str, object]:
    if call is None:
        return {}
    try:
        args = load_arguments(call.arguments)
    except ArgumentsError:
        return {}
    return args if isinstance(args, dict) else {}


def approval_text(tool: str, what: str, call: ToolCall | None, where: str | None = None) -> Text:
    """What will run or change, whole: the command (and the sandbox it runs in); the diff of an
    edit (old → new); the whole content of a write. Escaped and redacted (``shown``), styled by
    line, never markup."""
    args = _arguments(call)
    out = Text()
    out.append(f"{shown(tool)}: {shown(what, newlines=False)}\n", style="bold")
    if where is not None:
        out.append(
            f"runs in: {shown(where, newlines=False)}\n",
            style="bold red" if "NO SANDBOX" in where else "bold",
        )
    out.append("\n")
    old, new, content = args.get("old"), args.get("new"), args.get("content")
    if tool == "shell" and isinstance(args.get("command"), str):
        out.append("$ " + shown(str(args["command"])) + "\n")
    elif isinstance(old, str) and isinstance(new, str):
        path = str(args.get("path", "file"))
        diff = difflib.unified_diff(
            old.splitlines(), new.splitlines(), f"a/{path}", f"b/{path}", lineterm="", n=3
        )
        for line in diff:
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else "dim"
            out.append(shown(line, newlines=False) + "\n", style=style)
    elif isinstance(content, str):
        for line in content.splitlines() or [""]:
            out.append("+" + shown(line, newlines=False) + "\n", style="green")
    elif call is not None:
        out.append(shown(call.arguments) + "\n")
    return out


class ApprovalScreen(ModalScreen[Answer]):
    BINDINGS = [
        Binding("y", "answer('once')", "Allow once"),
        Binding("a", "answer('session')", "Allow for this session"),
        Binding("n,escape", "answer('decline')", "Decline"),
    ]
    DEFAULT_CSS = """
    ApprovalScreen { align: center middle; }
    ApprovalScreen > Vertical {
        width: 90%; max-width: 120; height: 90%; border: thick $warning; background: $panel; padding: 0 1;
    }
    ApprovalScreen #what { height: 1fr; }
    ApprovalScreen Horizontal { height: 1; margin-bottom: 1; }
    ApprovalScreen Button { margin-right: 2; }
    """

    def __init__(self, tool: str, what: str, call: ToolCall | None, where: str | None = None) -> None:
        super().__init__()
        self.tool, self.what, self.call, self.where = tool, what, call, where

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Allow this?", style="bold"))
            with VerticalScroll(id="what"):
                yield Static(approval_text(self.tool, self.what, self.call, self.where), id="detail")
            with Horizontal():
                yield Button("Allow once (y)", id="once", variant="primary", compact=True)
                yield Button("For this session (a)", id="session", compact=True)
                yield Button("Decline (n, Esc)", id="decline", variant="error", compact=True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_answer(str(event.button.id))

    def action_answer(self, answer: str) -> None:
        self.dismiss("once" if answer == "once" else "session" if answer == "session" else "decline")


@dataclass(frozen=True, slots=True, kw_only=True)
class Pick:
    """A session as the picker lists it."""

    id: str
    first_message: str | None
    model: str | None
    last: str | None  # time of its last event
    cache_share: str  # "87%", "unknown", "-"

    def line(self, now: datetime, width: int = 40) -> Text:
        first = " ".join((self.first_message or "-").split())
        first = shown(first, newlines=False)
        first = first if len(first) <= width else first[: width - 1] + "…"
        text = Text()
        text.append(f"{age(self.last, now):>4} ", style="dim")
        text.append(f"{self.id[-8:]} ", style="dim")
        text.append(f"{shown(self.model or '-', newlines=False)[:10]:<10} ")
        text.append(f"{self.cache_share:>4} ", style="dim")
        text.append(first)
        return text

    def matches(self, query: str) -> bool:
        q = query.casefold()
        return any(q in (s or "").casefold() for s in (self.first_message, self.model, self.id))


def age(t: str | None, now: datetime) -> str:
    if not t:
        return "-"
    try:
        then = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        return "-"
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    s = max((now - then).total_seconds(), 0)
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if s >= size:
            return f"{int(s // size)}{unit}"
    return f"{int(s)}s"


class _Picker(ModalScreen[str | None]):
    """A picker: Esc closes it, and the other picker's key closes it and opens that one.

    On a terminal Esc is also the first byte of a key's escape sequence, so Esc and a key typed
    right after it (within Textual's ESCDELAY, or read in one go by a busy app) arrive as that key
    alone (Alt+key), the Esc lost: Esc then Ctrl+O must still give the model picker (ADR 0433)."""

    BINDINGS = [
        Binding("escape", "dismiss_none", "Close"),
        Binding("ctrl+o", "instead('models')", "Model", show=False),
        Binding("ctrl+r", "instead('resume')", "Resume", show=False),
    ]

    def action_dismiss_none(self) -> None:
        self.dismiss(None)

    def action_instead(self, action: str) -> None:
        """Close this picker, then run the app's ``action`` (which opens the other picker)."""
        self.dismiss(None)
        self.app.call_later(self.app.run_action, action)


class PickerScreen(_Picker):
    """Sessions, newest first: age, model, token cache share, first message; typing filters."""

    DEFAULT_CSS = """
    PickerScreen { align: center middle; }
    PickerScreen > Vertical {
        width: 95%; max-width: 110; height: 90%; border: thick $primary; background: $panel;
    }
    PickerScreen OptionList { height: 1fr; }
    """

    def __init__(self, now: datetime, picks: Iterable[Pick] | None = None, query: str = "") -> None:
        """``picks`` None: still being read (``show`` lists them); ``query`` the search to start with."""
        super().__init__()
        self.picks = None if picks is None else list(picks)
        self.now = now
        self.query_text = query

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Resume a session: type to search, Enter opens, Esc closes", style="bold"))
            yield Input(
                self.query_text, placeholder="search first message, model or id", id="query", compact=True
            )
            yield Static(Text(" age session  model      cache first message", style="dim"), id="columns")
            yield OptionList(id="sessions")

    def on_mount(self) -> None:
        self._fill(self.query_text)
        self.query_one(Input).focus()

    def show(self, picks: list[Pick]) -> None:
        """The sessions, once read (what was typed meanwhile filters them)."""
        self.picks = picks
        if self.is_mounted:
            self._fill(self.query_one(Input).value)

    def _fill(self, query: str) -> None:
        options = self.query_one(OptionList)
        columns = self.query_one("#columns", Static)
        if self.picks is None:
            columns.update(Text(" reading the sessions…", style="dim"))
            return
        columns.update(Text(" age session  model      cache first message", style="dim"))
        width = max(min(self.app.size.width, 110) - 42, 16)  # what is left of the row for the message
        options.clear_options()
        options.add_options(
            [Option(p.line(self.now, width), id=p.id) for p in self.picks if not query or p.matches(query)]
        )
        if options.option_count:
            options.highlighted = 0

    def on_input_changed(self, event: Input.Changed) -> None:
        self._fill(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        options = self.query_one(OptionList)
        if options.highlighted is not None:
            self.dismiss(options.get_option_at_index(options.highlighted).id)

    def on_key(self, event: object) -> None:
        key = getattr(event, "key", "")
        options = self.query_one(OptionList)
        if key in ("down", "up") and self.query_one(Input).has_focus:
            options.action_cursor_down() if key == "down" else options.action_cursor_up()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


class ModelScreen(_Picker):
    """The configured models, the current one starred; Enter switches."""

    DEFAULT_CSS = """
    ModelScreen { align: center middle; }
    ModelScreen > Vertical {
        width: 60; height: auto; max-height: 80%; border: thick $primary; background: $panel;
    }
    ModelScreen OptionList { height: auto; max-height: 20; }
    """

    def __init__(self, models: list[str], current: str) -> None:
        super().__init__()
        self.models, self.current = models, current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Switch model (Enter picks, Esc closes)", style="bold"))
            yield OptionList(
                *[
                    Option(("* " if m == self.current else "  ") + shown(m, newlines=False), id=m)
                    for m in self.models
                ]
            )

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = self.models.index(self.current) if self.current in self.models else 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,f1", "close", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90%; max-width: 90; height: 90%; border: thick $primary; background: $panel; padding: 0 1;
    }
    """

    def __init__(self, keys: list[tuple[str, str]], commands: list[tuple[str, str]]) -> None:
        super().__init__()
        self.keys, self.commands = keys, commands

    def compose(self) -> ComposeResult:
        text = Text()
        for title, rows in (("Keys", self.keys), ("\nCommands (type them; Tab completes)", self.commands)):
            text.append(title + "\n", style="bold")
            for key, what in rows:
                text.append(f" {key:<20}", style="bold")
                text.append(f"{what}\n")
        with VerticalScroll():
            yield Static(text, id="help")

    def action_close(self) -> None:
        self.dismiss(None)
