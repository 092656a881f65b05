"""Tools from MCP servers (the official ``mcp`` SDK): see README.md.

The SDK takes about 1.5 s to import, so ``Hub``, ``Started``, ``Made`` and ``make_tools`` load it
when first named (PEP 562): a session without MCP servers, and every command that only reads
config, never imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nodwyn.mcp.config import ServerConfig

if TYPE_CHECKING:
    from nodwyn.mcp.client import Hub, Started
    from nodwyn.mcp.tools import Made, make_tools

__all__ = ["Hub", "Made", "ServerConfig", "Started", "make_tools"]


def __getattr__(name: str) -> Any:
    if name in ("Hub", "Started"):
        from nodwyn.mcp import client

        return getattr(client, name)
    if name in ("Made", "make_tools"):
        from nodwyn.mcp import tools

        return getattr(tools, name)
    raise AttributeError(f"module 'nodwyn.mcp' has no attribute {name!r}")
