"""The stdio transport: the server's process, and its stdout read as JSON-RPC lines with a cap.

The SDK's own stdio client reads a line as text and grows it piece by piece, which takes minutes
for a 100 MB answer; this one splits bytes and stops a line at ``MAX_MESSAGE``: what is past the
cap is skipped to the line's end and the line is reported as ``TooLarge`` (the calls in flight fail
at once, naming the server). The process is started by ``agent.sandbox.spawn`` in the sandbox its
``Launch`` names (bwrap, or unconfined when ``off``), in a session (and so a process group) of its
own; its pipes are read and written without blocking on the event loop. Leaving the transport
closes its stdin, waits ``GRACE`` seconds, then SIGTERMs and SIGKILLs the group, as the MCP
specification's shutdown says (under bwrap the group is bwrap's, and its PID namespace goes with it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import IO, Any

import anyio
import anyio.to_thread
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from nodwyn.agent import spawn
from nodwyn.mcp.launch import Launch

MAX_MESSAGE = 16 * 1024 * 1024
GRACE = 2.0
CHUNK = 1024 * 1024


class TooLarge(ValueError):
    """A line on the server's stdout longer than ``MAX_MESSAGE``."""


def parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


def _killpg(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _read(fd: int) -> bytes:
    while True:
        try:
            return os.read(fd, CHUNK)
        except BlockingIOError:
            await anyio.wait_readable(fd)


async def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            await anyio.wait_writable(fd)


def _close(stream: IO[bytes] | None) -> None:
    if stream is not None and not stream.closed:
        with contextlib.suppress(Exception):
            anyio.notify_closing(stream.fileno())
        with contextlib.suppress(OSError):
            stream.close()


def _start(launch: Launch, stderr: IO[str]) -> subprocess.Popen[bytes]:
    return spawn(
        launch.sandbox,
        launch.argv,
        workspace=launch.workspace,
        env=launch.env,
        cwd=launch.cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        start_new_session=True,
    )


async def _reader(fd: int, read_send: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
    """The server's stdout as messages, one a line; a line over ``MAX_MESSAGE`` is one ``TooLarge``."""
    buf, skipping = bytearray(), False
    async with read_send:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            while chunk := await _read(fd):
                start = 0
                while True:
                    end = chunk.find(b"\n", start)
                    if not skipping:
                        buf += chunk[start : None if end < 0 else end]
                        if len(buf) > MAX_MESSAGE:
                            buf.clear()
                            skipping = True
                            await read_send.send(TooLarge(f"a message of more than {MAX_MESSAGE} bytes"))
                    if end < 0:
                        break
                    if not skipping and buf.strip():
                        await read_send.send(parse(bytes(buf)))
                    buf.clear()
                    skipping, start = False, end + 1


@asynccontextmanager
async def stdio_transport(
    launch: Launch, stderr: IO[str], on_spawn: Callable[[int], None]
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[Any], MemoryObjectSendStream[SessionMessage]]]:
    process = await anyio.to_thread.run_sync(_start, launch, stderr)  # bwrap's probe may take a moment
    on_spawn(process.pid)
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout
    os.set_blocking(stdin.fileno(), False)
    os.set_blocking(stdout.fileno(), False)
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](16)

    async def writer() -> None:
        async with write_recv:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for message in write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await _write(stdin.fileno(), data.encode() + b"\n")

    async def exited(seconds: float) -> bool:
        with anyio.move_on_after(seconds):
            while process.poll() is None:
                await anyio.sleep(0.02)
        return process.returncode is not None

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_reader, stdout.fileno(), read_send)
            tg.start_soon(writer)
            try:
                yield read_recv, write_send
            finally:
                with anyio.CancelScope(shield=True):
                    await write_send.aclose()
                    await anyio.sleep(0)  # the writer sees the stream closed before its pipe is
                    _close(stdin)
                    for sig in (None, signal.SIGTERM, signal.SIGKILL):
                        if sig is not None:
                            _killpg(process.pid, sig)
                        if await exited(GRACE):
                            break
                    _killpg(process.pid, signal.SIGKILL)  # what the server left behind in its group
                tg.cancel_scope.cancel()
    finally:
        _close(stdin)
        _close(stdout)
