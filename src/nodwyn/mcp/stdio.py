"""The stdio transport: the server's process, and its stdout read as JSON-RPC lines with a cap.

The SDK's own stdio client reads a line as text and grows it piece by piece, which takes minutes
for a 100 MB answer; this one splits bytes and stops a line at ``MAX_MESSAGE``: what is past the
cap is skipped to the line's end and the line is reported as ``TooLarge`` (the calls in flight fail
at once, naming the server). The process runs in a session (and so a process group) of its own;
leaving the transport closes its stdin, waits ``GRACE`` seconds, then SIGTERMs and SIGKILLs the
group, as the MCP specification's shutdown says.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import IO, Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import StdioServerParameters
from mcp.shared.message import SessionMessage

MAX_MESSAGE = 16 * 1024 * 1024
GRACE = 2.0


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


@asynccontextmanager
async def stdio_transport(
    params: StdioServerParameters, stderr: IO[str], on_spawn: Callable[[int], None]
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[Any], MemoryObjectSendStream[SessionMessage]]]:
    process = await anyio.open_process(
        [params.command, *params.args],
        env=params.env,
        cwd=params.cwd,
        stderr=stderr,
        start_new_session=True,
    )
    on_spawn(process.pid)
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](16)

    async def reader() -> None:
        assert process.stdout is not None
        buf, skipping = bytearray(), False
        async with read_send:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                async for chunk in process.stdout:
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

    async def writer() -> None:
        assert process.stdin is not None
        async with write_recv:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for message in write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode() + b"\n")

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_recv, write_send
        finally:
            with anyio.CancelScope(shield=True):
                await write_send.aclose()
                if process.stdin is not None:
                    with contextlib.suppress(Exception):
                        await process.stdin.aclose()
                for sig in (None, signal.SIGTERM, signal.SIGKILL):
                    if sig is not None:
                        _killpg(process.pid, sig)
                    with anyio.move_on_after(GRACE):
                        await process.wait()
                    if process.returncode is not None:
                        break
                _killpg(process.pid, signal.SIGKILL)  # what the server left behind in its group
            tg.cancel_scope.cancel()
