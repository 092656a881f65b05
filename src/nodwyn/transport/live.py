"""The text and thinking fragments of a stream event, for live display only.

The dialect's decoder assembles the reply; this only peeks at the few documented delta fields so
the person sees the reply as it comes. A fragment it misses is still in the reply, and an event
it cannot read is left to the decoder to judge.
"""

from __future__ import annotations

from typing import Any

import orjson

from nodwyn.dialects.base import StreamEvent

Fragment = tuple[str, str]  # ("text" | "thinking", chunk)


def _pairs(**fields: Any) -> list[Fragment]:
    return [(k, v) for k, v in fields.items() if isinstance(v, str) and v]


def fragments(api: str, ev: StreamEvent) -> list[Fragment]:
    if ev.data == "[DONE]":
        return []
    try:
        data = orjson.loads(ev.data)
    except orjson.JSONDecodeError:
        return []
    if not isinstance(data, dict):
        return []
    if api == "ollama":
        msg = data.get("message")
        if isinstance(msg, dict):
            return _pairs(thinking=msg.get("thinking"), text=msg.get("content"))
        return []
    if api == "openai-chat":
        out: list[Fragment] = []
        for choice in data.get("choices") or []:
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if isinstance(delta, dict):
                thinking = delta.get("reasoning_content") or delta.get("reasoning")
                out += _pairs(thinking=thinking, text=delta.get("content"))
        return out
    if api == "responses":
        kind = data.get("type")
        if kind == "response.output_text.delta":
            return _pairs(text=data.get("delta"))
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return _pairs(thinking=data.get("delta"))
        return []
    if api == "anthropic" and data.get("type") == "content_block_delta":
        delta = data.get("delta")
        if isinstance(delta, dict):
            return _pairs(text=delta.get("text"), thinking=delta.get("thinking"))
    return []
