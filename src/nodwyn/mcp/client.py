"""The session's MCP servers, on the official SDK: one event loop thread holds every connection.

``Hub.start(servers)`` starts them all at once and waits for each to ``initialize`` and list every
page of its tools (within its ``start_timeout``); a server that fails is a ``Started`` with the one
line saying why, and the session goes on without it. ``Hub.call`` runs one ``tools/call`` from the
caller's thread: the call's timeout, progress lines handed back to that thread, and Ctrl-C cancelling
the request (the SDK sends ``notifications/cancelled``). A server that exits, or writes a line to
stdout that is not JSON-RPC, fails the calls in flight at once with a line naming it.
``notifications/tools/list_changed`` only leaves a note (``Hub.notes``): the catalog is the one
listed at start (ADR 0360). ``Hub.close`` ends every connection; stdio servers' process groups are
killed (the SDK's shutdown, then ``ProcessGroups`` as a last resort).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import math
import queue
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import httpx2
import mcp_types as types
import pydantic_core
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from nodwyn.agent import ProcessGroups, Sandbox, SandboxError, group_alive, kill_group
from nodwyn.errors import ToolError
from nodwyn.log import Known
from nodwyn.mcp.config import ServerConfig
from nodwyn.mcp.launch import stdio_command
from nodwyn.mcp.stderr import StderrSink
from nodwyn.mcp.stdio import TooLarge, stdio_transport

MAX_PAGES = 1000  # tools/list pages: a server that pages on forever is refused
CLOSE_TIMEOUT = 8.0  # the SDK's own shutdown waits at most about 6.5 s
CLIENT_INFO = types.Implementation(name="nodwyn", version="0.1.0")


@dataclass(frozen=True, slots=True, kw_only=True)
class Started:
    """A server after its start: its listed tools, or why it has none."""

    server: ServerConfig
    tools: tuple[types.Tool, ...] = ()
    error: str | None = None  # one line naming the server
    version: str | None = None  # serverInfo name/version
    seconds: float = 0.0


class Connection:
    """One server's connection, run as one task on the hub's loop (anyio scopes stay in it)."""

    def __init__(self, server: ServerConfig, hub: Hub, headers: Mapping[str, str]) -> None:
        self.server = server
        self.name = server.name
        self._hub = hub
        self._headers = dict(headers)
        self.session: ClientSession | None = None
        self.pid: int | None = None
        self.gone: str | None = None  # why calls can no longer be made
        self._stop: anyio.Event | None = None
        self._calls: set[anyio.CancelScope] = set()
        self._fault: str | None = None  # why the calls in flight were failed
        self.sink: StderrSink | None = None

    async def serve(self, started: concurrent.futures.Future[Started]) -> None:
        self._stop = anyio.Event()
        t0 = time.monotonic()
        scope = anyio.CancelScope(deadline=anyio.current_time() + self.server.start_timeout)
        try:
            with scope:
                async with AsyncExitStack() as stack:
                    read, write = await self._open(stack)
                    session = await stack.enter_async_context(
                        ClientSession(read, write, message_handler=self._on_message, client_info=CLIENT_INFO)
                    )
                    init = await session.initialize()
                    tools = await self._list(session)
                    scope.deadline = math.inf  # started: the start's deadline is over
                    self.session = session
                    info = init.server_info
                    version = None if info is None else f"{info.name} {info.version}"
                    seconds = time.monotonic() - t0
                    started.set_result(
                        Started(server=self.server, tools=tools, version=version, seconds=seconds)
                    )
                    await self._stop.wait()
                    self.gone = "the session ended"
            if scope.cancelled_caught and not started.done():
                raise TimeoutError
        except Exception as exc:  # every fault is a line naming the server; the session goes on
            self.gone = why = self._why(exc)
            if not started.done():
                started.set_result(Started(server=self.server, error=why, seconds=time.monotonic() - t0))
        except BaseException:
            if not started.done():
                started.set_result(
                    Started(server=self.server, error=f"mcp server {self.name}: start cancelled")
                )
            raise
        finally:
            self.session = None
            self._fail_calls(self.gone or "the connection closed")
            if self.sink is not None:
                self.sink.spawned()

    async def _open(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        s = self.server
        if s.transport == "stdio":
            self.sink = sink = StderrSink(s.name, self._hub.known)
            hub = self._hub
            launch = stdio_command(s, hub.env, sandbox=hub.sandbox, workspace=hub.workspace)

            def spawned(pid: int) -> None:
                self.pid = pid
                self._hub.processes.keep(pid)  # a session of its own: its group id is its pid
                sink.spawned()

            return await stack.enter_async_context(stdio_transport(launch, sink.writer, spawned))
        assert s.url is not None
        client = httpx2.AsyncClient(headers=self._headers, timeout=httpx2.Timeout(30.0, read=300.0))
        await stack.enter_async_context(client)
        return await stack.enter_async_context(streamable_http_client(s.url, http_client=client))

    async def _list(self, session: ClientSession) -> tuple[types.Tool, ...]:
        """Every page of tools/list. The SDK checks each page against the protocol's types: a tool
        they refuse (an inputSchema that is not an object's) refuses the server, in one line."""
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tuple(tools)
        raise ToolError(f"mcp server {self.name}: tools/list gave more than {MAX_PAGES} pages")

    def _why(self, exc: BaseException) -> str:
        s, where = self.server, f"mcp server {self.name}"
        tail = f"; its stderr ends: {self.sink.tail[-1][:200]}" if self.sink and self.sink.tail else ""
        if isinstance(exc, TimeoutError):
            return (
                f"{where}: no answer to initialize and tools/list within {s.start_timeout:g} s "
                f"(start_timeout in {s.where}){tail}"
            )
        if isinstance(exc, FileNotFoundError | PermissionError):
            return f"{where}: cannot run {s.command!r} ({exc.strerror}); fix command in {s.where}"
        if isinstance(exc, SandboxError):
            return f'{where}: {exc}; or set sandbox = "off" in {s.where} to run it unconfined'
        if isinstance(exc, BaseExceptionGroup):
            inner = exc.exceptions[0] if exc.exceptions else exc
            return self._why(inner)
        if isinstance(exc, pydantic_core.ValidationError):
            first = exc.errors()[0]
            at = ".".join(str(p) for p in first["loc"])
            return f"{where}: its {exc.title} is not what MCP says at {at}: {first['msg']}{tail}"
        if isinstance(exc, MCPError):
            return f"{where}: {exc.error.message}{tail}"
        if isinstance(exc, httpx2.HTTPError):
            return f"{where}: {s.url}: {type(exc).__name__}: {exc}; is the server running?"
        text = " ".join((str(exc) or type(exc).__name__).split())
        return f"{where}: {text[:300]}{tail}"

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, TooLarge):
            self._hub.note(f"mcp server {self.name} sent {message}; it was left out")
            self._fail_calls(f"answered with {message} (the cap on one message); the answer is left out")
        elif isinstance(message, Exception):
            text = str(message)[:200]
            self._hub.note(f"mcp server {self.name} wrote what is not JSON-RPC to stdout: {text}")
            self._fail_calls(f"wrote what is not JSON-RPC to stdout ({text}); the call's answer is lost")
        elif isinstance(message, types.ToolListChangedNotification):
            self._hub.note(f"{self.name} changed its tools; they take effect on the next resume")

    def _fail_calls(self, why: str) -> None:
        self._fault = why
        for scope in list(self._calls):
            scope.cancel()

    async def call(
        self,
        tool: str,
        args: dict[str, Any],
        timeout: float,
        report: Callable[[float, float | None, str | None], None],
    ) -> types.CallToolResult:
        session = self.session
        if session is None:
            raise ToolError(f"mcp server {self.name} is not running ({self.gone or 'it did not start'})")

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            report(progress, total, message)

        with anyio.CancelScope() as scope:
            self._calls.add(scope)
            try:
                result = await session.call_tool(
                    tool, args, read_timeout_seconds=timeout, progress_callback=on_progress
                )
            finally:
                self._calls.discard(scope)
        if scope.cancelled_caught:
            raise ToolError(f"mcp server {self.name}: {tool}: {self._fault or self.gone or 'cancelled'}")
        if not isinstance(result, types.CallToolResult):
            raise ToolError(
                f"mcp server {self.name}: {tool}: answered with {type(result).__name__}, not a result"
            )
        return result

    async def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()


class Hub:
    """Every MCP server of one session, on one event loop in a thread of its own."""

    def __init__(
        self,
        *,
        env: Mapping[str, str],
        sandbox: Sandbox,
        workspace: Path,
        known: Known | None = None,
        processes: ProcessGroups | None = None,
    ) -> None:
        """``sandbox``: the session's, which its stdio servers run in unless their entry says
        otherwise; ``workspace``: the folder it binds (and servers start in, unless ``cwd``)."""
        self.env = env
        self.sandbox = sandbox
        self.workspace = workspace
        self.known = known
        self.processes = processes or ProcessGroups()
        self.connections: dict[str, Connection] = {}
        self._served: dict[str, concurrent.futures.Future[None]] = {}
        self._notes: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._portal_cm = anyio.from_thread.start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        self._closed = False
        self.on_progress: Callable[[str], None] | None = None  # where progress lines are shown
        self.store: Callable[[bytes], str] | None = None  # the session's attachments (images)

    def note(self, text: str) -> None:
        """A line for the session's log and the person (taken by ``notes`` on the caller's thread)."""
        self._notes.put(text)

    def notes(self) -> list[str]:
        out = []
        with contextlib.suppress(queue.Empty):
            while True:
                out.append(self._notes.get_nowait())
        return out

    def start(
        self, servers: Sequence[ServerConfig], headers: Mapping[str, Mapping[str, str]] | None = None
    ) -> list[Started]:
        """Start ``servers`` at once; each is listed or has its error, in the order given."""
        waits: list[concurrent.futures.Future[Started]] = []
        for server in servers:
            if server.name in self.connections:
                raise ValueError(f"mcp server {server.name} is already started in this session")
            conn = Connection(server, self, (headers or {}).get(server.name, {}))
            self.connections[server.name] = conn
            started: concurrent.futures.Future[Started] = concurrent.futures.Future()
            self._served[server.name] = self._portal.start_task_soon(conn.serve, started)
            waits.append(started)
        return [
            w.result(timeout=s.start_timeout + CLOSE_TIMEOUT) for w, s in zip(waits, servers, strict=True)
        ]

    def call(
        self,
        server: str,
        tool: str,
        args: dict[str, Any],
        *,
        timeout: float,
        on_progress: Callable[[str], None] | None = None,
    ) -> types.CallToolResult:
        """One ``tools/call``, waited for on this thread: progress lines go to ``on_progress`` here;
        Ctrl-C (KeyboardInterrupt) cancels the request and is raised again."""
        conn = self.connections.get(server)
        if conn is None:
            raise ToolError(f"mcp server {server} is not configured in this session")
        lines: queue.SimpleQueue[str] = queue.SimpleQueue()  # from the hub's loop to this thread

        def progress(done: float, total: float | None, message: str | None) -> None:
            of = "" if total is None else f"/{total:g}"
            lines.put(f"{server}: {tool} {done:g}{of}" + (f" {message}" if message else ""))

        future: concurrent.futures.Future[types.CallToolResult]
        future = self._portal.start_task_soon(conn.call, tool, args, timeout, progress)
        end = time.monotonic() + timeout + CLOSE_TIMEOUT
        try:
            while True:
                try:
                    result = future.result(timeout=0.1)
                    break
                except concurrent.futures.TimeoutError:
                    self._show(lines, on_progress)
                    if time.monotonic() > end:
                        future.cancel()
                        raise ToolError(_no_answer(server, tool, timeout)) from None
        except KeyboardInterrupt:
            future.cancel()  # the SDK sends notifications/cancelled for the request
            raise
        except MCPError as exc:
            raise ToolError(_mcp_error(server, tool, exc, timeout)) from None
        except concurrent.futures.CancelledError:
            raise ToolError(f"mcp server {server}: {tool}: the call was cancelled") from None
        self._show(lines, on_progress)
        return result

    @staticmethod
    def _show(lines: queue.SimpleQueue[str], on_progress: Callable[[str], None] | None) -> None:
        with contextlib.suppress(queue.Empty):
            while True:
                line = lines.get_nowait()
                if on_progress is not None:
                    on_progress(line)

    def bind(
        self,
        folder: Path,
        store: Callable[[bytes], str] | None = None,
        on_progress: Callable[[str], None] | None = None,
    ) -> dict[str, Path]:
        """The session exists: each stdio server's stderr file goes to its folder, images to its
        attachments, progress lines to ``on_progress``."""
        self.store, self.on_progress = store, on_progress
        return {n: c.sink.bind(folder) for n, c in self.connections.items() if c.sink is not None}

    def close(self) -> None:
        """End every connection; a stdio server's process group is killed if it outlives that."""
        if self._closed:
            return
        self._closed = True
        try:
            for conn in self.connections.values():
                with contextlib.suppress(Exception):
                    self._portal.call(conn.stop)
            end = time.monotonic() + CLOSE_TIMEOUT
            for served in self._served.values():
                with contextlib.suppress(Exception):
                    served.result(timeout=max(end - time.monotonic(), 0.01))
                served.cancel()  # one that would not end in time is cancelled, its group killed below
        finally:
            for conn in self.connections.values():
                if conn.pid is not None:
                    self.processes.forget(conn.pid)
                    if group_alive(conn.pid):
                        kill_group(conn.pid, grace=0.2)
                if conn.sink is not None:
                    conn.sink.close()
            with contextlib.suppress(Exception):
                self._portal_cm.__exit__(None, None, None)


def _no_answer(server: str, tool: str, timeout: float) -> str:
    return f"mcp server {server}: {tool}: no answer after {timeout:g} s (the call's timeout)"


def _mcp_error(server: str, tool: str, exc: MCPError, timeout: float) -> str:
    if exc.error.code == types.REQUEST_TIMEOUT:
        return _no_answer(server, tool, timeout)
    if exc.error.code == types.CONNECTION_CLOSED:
        return f"mcp server {server}: {tool}: the server closed the connection ({exc.error.message})"
    return f"mcp server {server}: {tool}: {exc.error.message}"
