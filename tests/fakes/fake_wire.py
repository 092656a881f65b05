"""Raw wire helpers for the fake-server tests: post a JSON body, split the stream by hand.

Deliberately independent of nodwyn's dialects, so the fakes are tested against the documented
shapes and not against the code they will test.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

SYSTEM = "You are a careful coding agent. Read before you write; run the tests after. " * 60  # ~1,500 tokens


_CLIENT = httpx.Client(timeout=10)


def post(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> httpx.Response:
    return _CLIENT.post(url, json=body, headers=headers or {})


def sse_events(text: str) -> list[tuple[str | None, str]]:
    """(event, data) pairs of an SSE body, comments skipped."""
    out = []
    for block in text.split("\n\n"):
        event, data = None, []
        for line in block.split("\n"):
            if line.startswith(":") or not line:
                continue
            name, _, value = line.partition(": ")
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
        if data:
            out.append((event, "\n".join(data)))
    return out


def sse_json(text: str) -> list[Any]:
    return [json.loads(d) for _, d in sse_events(text) if d != "[DONE]"]


def ndjson(text: str) -> list[Any]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]
