"""The request's canonical bytes, assembled from the messages' cached pieces.

JCS orders the request's keys ``max_output``, ``messages``, ``system``, ``tools``; each message's
piece is its own canonical form, so joining them gives exactly
``canonical_bytes(request_to_json(request))`` without walking the whole request again (a test holds
the two equal).
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from nodwyn.values.canonical import canonical_bytes
from nodwyn.values.codec import tool_to_json
from nodwyn.values.request import ToolSpec

_OPEN = b'{"max_output":'
_MESSAGES = b',"messages":['
_SYSTEM = b'],"system":'
_TOOLS = b',"tools":'
_CLOSE = b"}"
_FRAME = len(_OPEN + _MESSAGES + _SYSTEM + _TOOLS + _CLOSE)  # the request's bytes around its parts


def _tools_bytes(tools: Sequence[ToolSpec]) -> bytes:
    return canonical_bytes([tool_to_json(t) for t in tools])


def _system_bytes(system: str) -> bytes:
    return orjson.dumps(system)


def max_output_bytes(max_output: int | None) -> bytes:
    return b"null" if max_output is None else str(max_output).encode()


def overhead(system: bytes, tools: bytes, max_output: bytes) -> int:
    """Bytes of the request besides its messages and the commas between them."""
    return _FRAME + len(max_output) + len(system) + len(tools)


def head(max_output: bytes) -> bytes:
    """The request's bytes before its first message."""
    return _OPEN + max_output + _MESSAGES


def tail(plan: bytes | None, first: bool, system: bytes, tools: bytes) -> bytes:
    """The request's bytes after the last pushed message: a trailing plan, then system and tools."""
    lead = b"" if plan is None else plan if first else b"," + plan
    return b"".join((lead, _SYSTEM, system, _TOOLS, tools, _CLOSE))
