"""A stdio MCP server written by hand (no SDK, which guards its stdout), for the faults a real
server's stdout can carry: ``python raw_server.py MODE`` answers initialize and tools/list, then
answers a tools/call with MODE: ``text`` (a line that is not JSON), ``json`` (JSON that is not
JSON-RPC), ``ok`` (a proper result); ``schema`` also lists a tool whose inputSchema is not JSON
Schema, ``scalar`` one whose inputSchema is not an object's."""

from __future__ import annotations

import json
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
TOOL = {"name": "poke", "description": "Poke.", "inputSchema": {"type": "object", "properties": {}}}


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize":
        result = {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "1"},
        }
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "tools/list":
        tools = [TOOL]
        if MODE == "schema":
            tools.append(
                {"name": "broken", "inputSchema": {"type": "object", "properties": {"a": {"type": 12}}}}
            )
        if MODE == "scalar":
            tools.append({"name": "scalar", "inputSchema": {"type": "string"}})
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
    elif method == "tools/call":
        if MODE == "text":
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
        elif MODE == "json":
            send({"hello": "world"})
        else:
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "poked"}]}})
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
