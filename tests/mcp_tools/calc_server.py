"""An MCP server written with the SDK's server API (FastMCP, named ``MCPServer`` in mcp 2), for the
tests: ``python calc_server.py [--http PORT [--token T]] [--flag ...]``; with ``--token`` an HTTP request
without ``authorization: Bearer T`` is refused with 401.

Flags make it misbehave the way the fault tests need: ``--hang-start`` (never answers initialize),
``--clash`` (two tools whose names
sanitise to one), ``--version N`` (the catalog a later resume sees: ``add`` says so in its text).
The SDK guards its stdout, so what is not JSON-RPC there is ``raw_server.py``'s business.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import sys

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

parser = argparse.ArgumentParser()
parser.add_argument("--http", type=int, default=0)
parser.add_argument("--token", default="", help="the bearer token every HTTP request must carry")
parser.add_argument("--hang-start", action="store_true")
parser.add_argument("--clash", action="store_true")
parser.add_argument("--version", type=int, default=1)
parser.add_argument("--pidfile", default="")
parser.add_argument("--marks", default="", help="a folder where slow writes 'cancelled' when cancelled")
opts = parser.parse_args()

if opts.hang_start:
    import time

    time.sleep(3600)

if opts.pidfile:
    with open(opts.pidfile, "w") as f:
        f.write(str(os.getpid()))

server = MCPServer("calc", version=f"{opts.version}.0")
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@server.tool(description=f"Add two integers (version {opts.version}).")
def add(a: int, b: int) -> int:
    print("adding", a, b, "secret=sk-ant-api03-" + "x" * 40, file=sys.stderr, flush=True)
    return a + b


@server.tool(description="Echo the text back.")
def echo(text: str) -> str:
    return text


@server.tool(description="Sleep, reporting progress each tenth of the way.")
async def slow(seconds: float, ctx: Context) -> str:
    try:
        for i in range(10):
            await ctx.report_progress(i + 1, 10, f"step {i + 1}")
            await asyncio.sleep(seconds / 10)
    except BaseException:  # the client's notifications/cancelled interrupts the handler
        if opts.marks:
            with open(os.path.join(opts.marks, "cancelled"), "w") as f:
                f.write("cancelled")
        raise
    return "slept"


@server.tool(description="Text of the given size in megabytes.")
def big(mb: int) -> str:
    return "x" * (mb * 1024 * 1024)


@server.tool(description="A one-pixel image, a resource link and text.")
def media() -> list[types.ContentBlock]:
    return [
        types.TextContent(type="text", text="here"),
        types.ImageContent(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png"),
        types.ResourceLink(
            type="resource_link", uri="file:///tmp/notes.txt", name="notes", mime_type="text/plain"
        ),
    ]


@server.tool(description="A structured answer.")
def point(x: int, y: int) -> dict[str, int]:
    return {"x": x, "y": y, "sum": x + y}


@server.tool(description="Always fails.")
def fail() -> str:
    raise ValueError("the calc server refuses")


@server.tool(description="Announce that the tool list changed (it has not: the catalog is frozen anyway).")
async def change(ctx: Context) -> str:
    await ctx.session.send_tool_list_changed()  # what a client on the handshake protocol hears
    return "announced"


@server.tool(description="Write text to a file and say whether it could (the sandbox tests).")
def write(path: str, text: str) -> str:
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as exc:
        return f"refused: {exc.strerror}"
    return "wrote"


@server.tool(description="Exit the server process in the middle of the call.")
async def die() -> str:
    await asyncio.sleep(0.2)
    os._exit(3)


if opts.clash:

    @server.tool(name="a.b", description="One.")
    def one() -> str:
        return "one"

    @server.tool(name="a b", description="Two.")
    def two() -> str:
        return "two"


if __name__ == "__main__":
    if opts.http and opts.token:
        import uvicorn
        from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
        from starlette.requests import Request
        from starlette.responses import PlainTextResponse, Response

        app = server.streamable_http_app()

        async def bearer_only(request: Request, call_next: RequestResponseEndpoint) -> Response:
            if request.headers.get("authorization") != f"Bearer {opts.token}":
                return PlainTextResponse("no or wrong bearer token", status_code=401)
            return await call_next(request)

        app.add_middleware(BaseHTTPMiddleware, dispatch=bearer_only)
        uvicorn.run(app, host="127.0.0.1", port=opts.http, log_level="warning")
    elif opts.http:
        server.run("streamable-http", host="127.0.0.1", port=opts.http)
    else:
        server.run()
