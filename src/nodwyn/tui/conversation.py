"""The conversation: events as the person reads them (their messages, the replies with thinking
dimmed and collapsible, each tool call with its arguments and a collapsible result), and the reply
as it streams. Everything shown went through ``cli.screen.shown`` (credentials redacted, control
characters spelled out) and is put on the screen as plain text, never as markup."""

from __future__ import annotations

from typing import assert_never

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Collapsible, Static

from nodwyn.cli import shown
from nodwyn.values.content import ToolCall
from nodwyn.values.events import (
    GATE_PLAN,
    MAIN_CTX,
    Bookkeeping,
    CtxClose,
    CtxOpen,
    Event,
    GatePlan,
    LlmReq,
    LlmResp,
    ModelSwitch,
    Note,
    Observed,
    SessionResume,
    SessionStart,
    ToolResult,
    UserMsg,
    decoded,
)

RESULT_LINES = 200  # lines of a tool result the screen holds; `nodwyn log` prints the rest
ARGS_WIDTH = 120


def _clip_lines(text: str, limit: int = RESULT_LINES) -> str:
    """The first ``limit`` lines of text already ``shown`` (redacted whole: half a key is a key)."""
    lines = text.splitlines()
    if len(lines) <= limit:
        return text
    more = len(lines) - limit
    return "\n".join(lines[:limit]) + f"\n… {more} more lines on the screen's cut (`nodwyn log` shows them)"


REPLY_CHARS = 60_000  # of a reply the screen draws (a longer one is marked as the screen's cut)
LIVE_CHARS = 8_000  # of a streaming reply the screen redraws each tick


def _clip_reply(text: str) -> str:
    if len(text) <= REPLY_CHARS:
        return text
    cut = text.rfind("\n", 0, REPLY_CHARS) + 1 or REPLY_CHARS
    return (
        text[:cut] + f"\n… {len(text) - cut:,} more characters on the screen's cut (`nodwyn log` shows them)"
    )


def _args(call: ToolCall) -> str:
    args = shown(call.arguments, newlines=False)
    return args if len(args) <= ARGS_WIDTH else args[: ARGS_WIDTH - 1] + "…"


class ToolItem(Collapsible):
    """A tool call, its arguments in the title, its result (collapsed) once it is logged."""

    def __init__(self, ctx: str, call: ToolCall) -> None:
        self.call = call
        self.ctx_name = ctx
        self.seq: int | None = None  # its tool.result
        self.elided_in: int | None = None  # the request that last elided it
        self.as_sent: tuple[int, str] | None = None  # (request, text) when a request sent it cut
        self.text: str | None = None  # the result, drawn when first expanded (a session's tail
        self.drawn = False  # holds tens of results; redacting and laying them out waits till asked)
        self.body = Static(Text("running…", style="dim"), classes="result")
        super().__init__(self.body, title=self._heading("…"), collapsed=True, classes="tool")

    def on_collapsible_expanded(self, event: Collapsible.Expanded) -> None:
        if event.collapsible is self:
            self.draw()

    def draw(self) -> None:
        if self.text is not None and not self.drawn:
            self.drawn = True
            text = self.text if self.as_sent is None else self.as_sent[1]
            self.body.update(Text(_clip_lines(shown(text))))

    def sent(self, req: int, text: str) -> None:
        """Request ``req`` sent this result as ``text``: if the window cut (or folded) it, that is
        what is drawn, and the title says so."""
        if self.text is None or self.seq is None:
            return
        if text == self.text:
            self.as_sent = None
        else:
            self.as_sent = (req, text)
            self.drawn = False
            if not self.collapsed:
                self.draw()
        self.title = self._heading(self._state())

    def _heading(self, state: str) -> str:
        where = "" if self.ctx_name == MAIN_CTX else f"[{self.ctx_name}] "
        return f"{where}→ {shown(self.call.name)} {_args(self.call)}  {state}"

    def _state(self) -> str:
        if self.text is None or self.seq is None:
            return "…"
        lines = self.text.count("\n") + 1
        state = "✗ error" if self.has_class("error") else f"✓ {lines} line{'' if lines == 1 else 's'}"
        state += f" · seq {self.seq}"
        if self.elided_in is not None:
            state += f" · elided from request {self.elided_in}"
        elif self.as_sent is not None:
            state += f" · cut as request {self.as_sent[0]} sent it (whole: `nodwyn log`)"
        return state

    def answered(self, result: ToolResult, seq: int) -> None:
        self.seq = seq
        self.set_class(result.error, "error")
        self.text, self.drawn = result.text, False
        self.title = self._heading(self._state())
        self.body.update(Text("(expand to read)", style="dim"))
        if not self.collapsed:
            self.draw()

    def elided(self, req: int) -> None:
        self.elided_in = req
        self.add_class("elided")
        self.title = self._heading(self._state())


class Conversation(VerticalScroll):
    """The session's events from the tail read at open, then as the agent appends them."""

    DEFAULT_CSS = """
    Conversation { height: 1fr; padding: 0 1; }
    Conversation .user { margin-top: 1; text-style: bold; }
    Conversation .reply { margin-bottom: 0; }
    Conversation .thinking { color: $text-muted; text-style: italic; }
    Conversation .aside { color: $text-muted; }
    Conversation .warn { color: $warning; }
    Conversation Collapsible { border-top: none; padding: 0; margin: 0; background: $surface; }
    Conversation Collapsible.error CollapsibleTitle { color: $error; }
    Conversation Collapsible.elided CollapsibleTitle { text-style: strike; }
    Conversation .result { color: $text-muted; }
    """

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self._empty()

    def _empty(self) -> None:
        self.tools: dict[str, ToolItem] = {}  # call id -> its item
        self.results: dict[int, ToolItem] = {}  # tool.result seq -> its item
        self._live: dict[str, Static] = {}  # kind -> the streaming widget
        self._live_text: dict[str, list[str]] = {}
        self.plan: str | None = None
        self.shown_events = 0
        self.first_seq: int | None = None  # the oldest event shown

    def reset(self) -> None:
        """Empty, for another session."""
        self.remove_children()
        self._empty()

    # -- streaming ----------------------------------------------------------------------------

    def stream(self, kind: str, text: str) -> None:
        """A batch of a streaming reply's text or thinking (already shown-safe)."""
        parts = self._live_text.setdefault(kind, [])
        parts.append(text)
        widget = self._live.get(kind)
        body = self._tail(parts)
        rendered = Text(body, style="dim italic" if kind == "thinking" else "")
        if widget is None:
            widget = Static(rendered, classes="live " + ("thinking" if kind == "thinking" else "reply"))
            self._live[kind] = widget
            self._mount(widget)
        else:
            widget.update(rendered)

    @staticmethod
    def _tail(parts: list[str]) -> str:
        """What the streaming widget draws: the reply's last ``LIVE_CHARS`` (the whole reply is
        drawn once, when it is logged), so a tick costs the same however long the reply grows."""
        size, keep = 0, []
        for part in reversed(parts):
            keep.append(part)
            size += len(part)
            if size >= LIVE_CHARS:
                break
        body = "".join(reversed(keep))
        if size < LIVE_CHARS:
            return body
        cut = body.find("\n", len(body) - LIVE_CHARS)
        return "…\n" + body[cut + 1 if cut >= 0 else len(body) - LIVE_CHARS :]

    def streamed(self, kind: str) -> str | None:
        """The text streamed of the current reply (already shown-safe), if it streamed."""
        parts = self._live_text.get(kind)
        return "".join(parts) if parts else None

    def end_stream(self) -> None:
        for widget in self._live.values():
            widget.remove()
        self._live.clear()
        self._live_text.clear()

    # -- events -------------------------------------------------------------------------------

    def _mount(self, *widgets: Widget) -> None:
        at_end = self.is_vertical_scroll_end or self.max_scroll_y == 0
        self.mount_all(widgets)
        if at_end:
            self.scroll_end(animate=False, immediate=False)

    def calling(self, ctx: str, call: ToolCall) -> None:
        """A call about to run (before its result is logged): shown as running."""
        if call.id in self.tools:
            return
        item = ToolItem(ctx, call)
        self.tools[call.id] = item
        self._mount(item)

    def prepend(self, events: list[Event]) -> None:
        """Show older events above those shown."""
        if not events:
            return
        widgets = self._drawn(events)
        self.first_seq = events[0].seq
        if widgets:
            self.mount_all(widgets, before=self.children[0] if self.children else None)

    def add(self, events: list[Event] | tuple[Event, ...]) -> str | None:
        """Show events; returns the plan if one of them recorded it."""
        if events and self.first_seq is None:
            self.first_seq = events[0].seq
        widgets = self._drawn(events)
        if widgets:
            self._mount(*widgets)
        plan: str | None = None
        for p in (decoded(event, GATE_PLAN) for event in events):
            if isinstance(p, GatePlan):
                plan = self.plan = p.text
        return plan

    def _drawn(self, events: list[Event] | tuple[Event, ...]) -> list[Widget]:
        self.shown_events += len(events)
        return [widget for event in events for widget in self._widgets(event)]

    def _widgets(self, event: Event) -> list[Widget]:
        p = decoded(event)
        where = "" if event.ctx == MAIN_CTX else f"[{event.ctx}] "
        match p:
            case UserMsg():
                images = f"  [{len(p.images)} image(s)]" if p.images else ""
                return [Static(Text(f"{where}› {shown(p.text)}{images}"), classes="user")]
            case LlmResp():
                return self._reply(event, p, where)
            case ToolResult():
                return self._result(event, p)
            case LlmReq():
                return self._request(event, p, where)
            case Note():
                return [Static(Text(f"{where}note: {shown(p.text)}"), classes="aside warn")]
            case ModelSwitch():
                return [Static(Text(f"model → {shown(p.model)}"), classes="aside")]
            case SessionResume():
                return [Static(Text(f"resumed on {shown(p.model)} (seq {event.seq})"), classes="aside")]
            case CtxOpen():
                return [Static(Text(f"{where}opened {p.kind} context {shown(p.id)}"), classes="aside")]
            case CtxClose():
                return [Static(Text(f"closed context {shown(p.id)}"), classes="aside")]
            case SessionStart() | GatePlan() | Bookkeeping() | Observed() | None:
                return []  # not drawn (the plan goes to its panel; a damaged payload shows nothing)
            case _:
                assert_never(p)

    def _reply(self, event: Event, p: LlmResp, where: str) -> list[Widget]:
        """A reply: its thinking (collapsed), its text and a tool item per call not shown yet.
        A reply that streamed was redacted and escaped as it came (screen.Stream, on the worker):
        that text is drawn, not the logged one redacted again on the screen's thread."""
        said, thought = self.streamed("text"), self.streamed("thinking")
        self.end_stream()
        out: list[Widget] = []
        r = p.response
        if r.thinking.strip():
            body = thought.strip() if thought is not None else shown(r.thinking.strip())
            thinking = Static(Text(_clip_reply(body), style="dim italic"), classes="thinking")
            out.append(Collapsible(thinking, title=f"{where}thinking", collapsed=True, classes="think"))
        if r.text.strip():
            body = said.strip() if said is not None else shown(r.text.strip())
            out.append(Static(Text(where + _clip_reply(body)), classes="reply"))
        for call in r.calls:
            if call.id not in self.tools:
                out.append(self.tools.setdefault(call.id, ToolItem(event.ctx, call)))
        return out

    def _result(self, event: Event, p: ToolResult) -> list[Widget]:
        """A result answers its call's tool item; one whose call is not shown gets an item of its own."""
        item = self.tools.get(p.call_id)
        new = item is None
        if item is None:
            call = ToolCall(id=p.call_id, name=p.name, arguments="")
            item = self.tools[p.call_id] = ToolItem(event.ctx, call)
        item.answered(p, event.seq)
        self.results[event.seq] = item
        return [item] if new else []

    def _request(self, event: Event, p: LlmReq, where: str) -> list[Widget]:
        """A request marks the results it elided; a trim is said in an aside."""
        for seq in p.elided:
            elided = self.results.get(seq)
            if elided is not None:
                elided.elided(event.seq)
        if not p.trim:
            return []
        text = f"{where}request {event.seq}: the window trimmed ({len(p.elided)} entries elided)"
        return [Static(Text(text), classes="aside")]

    def sent(self, req: int, results: dict[str, str]) -> None:
        """What request ``req`` sent of each result shown (cuts marked; elisions come from the
        request's record)."""
        for call_id, text in results.items():
            item = self.tools.get(call_id)
            if item is not None and item.elided_in is None:
                item.sent(req, text)

    def notice(self, text: str) -> None:
        self._mount(Static(Text(text), classes="aside warn"))

    def toggle(self, kind: str) -> None:
        """Expand every ``kind`` block (``think``, ``tool``) if one is collapsed, else collapse them."""
        found = list(self.query(f"Collapsible.{kind}").results(Collapsible))
        expanded = any(c.collapsed for c in found)
        for c in found:
            c.collapsed = not expanded
