"""Between the agent's worker thread and the app: what the turn loop shows goes into a queue that
the app drains on a timer (a batch per frame, however fast the reply streams); an approval asked
from the worker waits for the person's answer in the app; a cancel raises ``KeyboardInterrupt`` in
the worker, the same interruption line mode gets from Ctrl-C (a running shell command's process
group is killed by the tool, and ``Agent.settle`` answers the calls left open).

Nothing here reads the log while a reply streams: the events appended since the last look are read
(by index, from the last seq seen) when a request is sent, a reply ends or a tool answers.
"""

from __future__ import annotations

import ctypes
import threading
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Literal

from nodwyn.agent import Agent, Outcome
from nodwyn.cli import Stream, shown
from nodwyn.log import SessionLog
from nodwyn.values.content import ToolCall, ToolMessage
from nodwyn.values.events import Event
from nodwyn.values.request import Response

Answer = Literal["once", "session", "decline"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Delta:
    kind: str  # "text" or "thinking"
    text: str  # redacted and escaped (screen.Stream): as it came, less what could still become a secret


@dataclass(frozen=True, slots=True, kw_only=True)
class Events:
    events: tuple[Event, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Sent:
    """What request ``req`` sent of each tool result, by call id (as the window cut or folded it)."""

    req: int
    results: dict[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class Calling:
    ctx: str
    call: ToolCall


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice:
    text: str  # shown already


@dataclass(frozen=True, slots=True, kw_only=True)
class Ask:
    tool: str
    what: str
    call: ToolCall | None  # the call being answered (its arguments show the whole diff)
    answer: Future[Answer]
    where: str | None = None  # a command's sandbox (compose.setup.where_it_runs)


class Bridge:
    """The ``Display`` the agent writes to (from its worker thread) and the approver it asks."""

    def __init__(self) -> None:
        self.log: SessionLog | None = None
        self.agent: Agent | None = None
        self.seen = 0  # the last seq handed to the app
        self._items: deque[object] = deque()
        self._streams: dict[str, Stream] = {}
        self._call: ToolCall | None = None
        self._asking: Future[Answer] | None = None
        self.allowed: set[str] = set()  # tools allowed for the rest of this session

    # -- the app's side ------------------------------------------------------------------------

    def attach(self, log: SessionLog, seen: int, agent: Agent | None = None) -> None:
        """The session's log, once opened, the last seq the app has shown, and the agent whose
        builds say what each request sent."""
        self.log, self.seen, self.agent = log, seen, agent

    def put(self, item: object) -> None:
        self._items.append(item)

    def drain(self) -> list[object]:
        """Everything queued since the last drain, in order (deque appends and pops are atomic)."""
        out: list[object] = []
        while self._items:
            out.append(self._items.popleft())
        return out

    def decline_pending(self) -> None:
        """A cancel while an approval waits: the question is answered no."""
        asking = self._asking
        if asking is not None and not asking.done():
            asking.set_result("decline")

    # -- the worker's side: agent.ports.Display --------------------------------------------------

    def _catch_up(self) -> None:
        """The events appended since the last look, read by index from the last seq seen."""
        if self.log is not None and self.log.last_seq > self.seen:
            events = tuple(self.log.read(self.seen + 1))
            if events:
                self.seen = events[-1].seq
                self._items.append(Events(events=events))

    def _flush_streams(self, but: str | None = None) -> None:
        for kind in [k for k in self._streams if k != but]:
            rest = self._streams.pop(kind).flush()
            if rest:
                self._items.append(Delta(kind=kind, text=rest))

    def delta(self, kind: str, fragment: str) -> None:
        self._flush_streams(but=kind)  # keep the order text and thinking came in
        ready = self._streams.setdefault(kind, Stream()).feed(fragment)
        if ready:
            self._items.append(Delta(kind=kind, text=ready))

    def request(self, event: Event) -> None:
        self._catch_up()
        build = None if self.agent is None else self.agent.last_build
        if build is not None:
            sent = {m.call_id: m.text for m in build.request.messages if isinstance(m, ToolMessage)}
            self._items.append(Sent(req=event.seq, results=sent))

    def response(self, event: Event, response: Response) -> None:
        self._flush_streams()
        self._catch_up()

    def tool_call(self, ctx: str, call: ToolCall) -> None:
        self._call = call
        self._items.append(Calling(ctx=ctx, call=call))

    def tool_result(self, ctx: str, call: ToolCall, outcome: Outcome) -> None:
        self._call = None
        self._catch_up()

    def notice(self, text: str) -> None:
        self._flush_streams()
        self._items.append(Notice(text=shown(text)))

    def finish(self) -> None:
        """After a turn (answered, failed or cancelled): what is left shown, the log caught up."""
        self._flush_streams()
        self._catch_up()

    # -- the worker's side: the approver's question ----------------------------------------------

    def ask(self, tool: str, what: str, where: str | None) -> bool:
        """Asked by ``compose.setup.approver``; waits for the modal's answer."""
        if tool in self.allowed:
            return True
        answer: Future[Answer] = Future()
        self._asking = answer
        self._items.append(Ask(tool=tool, what=what, call=self._call, answer=answer, where=where))
        try:
            decided = answer.result()
        finally:
            self._asking = None
        if decided == "session":
            self.allowed.add(tool)
        return decided != "decline"


class Turns:
    """The one worker thread that runs the agent, and its interruption."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: int | None = None

    def enter(self) -> None:
        with self._lock:
            self._thread = threading.get_ident()

    def leave(self) -> None:
        """The worker is done: an interruption asked too late is dropped, not raised later."""
        with self._lock:
            if self._thread is not None:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread), None)
            self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None

    def interrupt(self) -> bool:
        """Raise ``KeyboardInterrupt`` in the running worker, as Ctrl-C does in line mode."""
        with self._lock:
            if self._thread is None:
                return False
            exc = ctypes.py_object(KeyboardInterrupt)
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread), exc)
            return True
