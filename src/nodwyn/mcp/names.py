"""A server's tool under the name the model sees: ``mcp__SERVER__TOOL``, within every API's rules.

The rules met are the strictest of the APIs we speak: letters, digits, ``_`` and ``-`` only, a
letter first, at most 64 characters. A tool name outside them (a dot, a space, too long) keeps its
readable part and gains eight hex digits of the SHA-256 of its name as the server gives it, so the same tool
always gets the same name and two tools that differ only in a refused character do not collide.
"""

from __future__ import annotations

import hashlib
import re

MAX_NAME = 64
PREFIX = "mcp"
SEPARATOR = "__"
_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """The catalog name of ``server``'s tool ``tool``."""
    head = f"{PREFIX}{SEPARATOR}{server}{SEPARATOR}"
    clean = _ALLOWED.sub("_", tool)
    name = head + clean
    if clean == tool and len(name) <= MAX_NAME and tool:
        return name
    tag = hashlib.sha256(tool.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    room = MAX_NAME - len(head) - len(tag) - 1
    return f"{head}{clean[: max(room, 0)]}_{tag}"


def server_of(name: str) -> str | None:
    """The server a catalog name says, or None for a name that is not an MCP tool's."""
    parts = name.split(SEPARATOR, 2)
    return parts[1] if len(parts) == 3 and parts[0] == PREFIX else None
