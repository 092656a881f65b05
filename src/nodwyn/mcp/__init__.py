"""Tools from MCP servers (the official ``mcp`` SDK): see README.md.

The SDK takes about 1.5 s to import, so ``Hub``, ``Started``, ``Made`` and ``make_tools`` load it
when first named (PEP 562): a session without MCP servers, and every command that only reads
config, never imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nodwyn import lazy

if TYPE_CHECKING:
    from nodwyn.mcp.client import Hub, Started
    from nodwyn.mcp.config import KEYS, ServerConfig, servers_from
    from nodwyn.mcp.names import server_of
    from nodwyn.mcp.tools import Made, make_tools

__all__ = ["KEYS", "Hub", "Made", "ServerConfig", "Started", "make_tools", "server_of", "servers_from"]

__getattr__ = lazy(__name__, {
    "client": "Hub Started", "config": "KEYS ServerConfig servers_from", "names": "server_of",
    "tools": "Made make_tools",
})  # fmt: skip
