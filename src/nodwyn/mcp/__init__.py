"""Tools from MCP servers (the official ``mcp`` SDK): see README.md."""

from __future__ import annotations

from nodwyn.mcp.client import Hub, Started
from nodwyn.mcp.config import ServerConfig
from nodwyn.mcp.tools import Made, make_tools

__all__ = ["Hub", "Made", "ServerConfig", "Started", "make_tools"]
