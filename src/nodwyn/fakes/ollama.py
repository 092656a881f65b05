"""A fake Ollama native server (``POST /api/chat``, NDJSON; ``GET /api/tags``).

One KV slot, exact prefix (``single``): ``prompt_eval_count`` is the whole prompt and only
``prompt_eval_duration`` shrinks with a hit (1 ms per uncached token), since Ollama reports no
cached count. A change of model or ``options.num_ctx`` reloads the model: the slot is emptied
and ``load_duration`` is reported. Metrics are omitted when zero, as Go's ``omitempty`` does.
It refuses string tool-call arguments, bad base64 images, an unknown model, and (with
``truncate: false``) a prompt longer than ``num_ctx``. ``keep_alive: 0`` unloads the model after the
reply, so the next request starts cold.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import orjson

from nodwyn.fakes.base import (
    EVAL_NS_PER_TOKEN,
    FIXED_TIME,
    PREFILL_NS_PER_TOKEN,
    ApiError,
    ReceivedRequest,
    Reply,
    State,
    json_reply,
    out_tokens,
    split_text,
)
from nodwyn.fakes.cache import Lookup, Prompt, SingleSlot, units_of
from nodwyn.fakes.script import ScriptItem

LOAD_NS = 2_000_000_000
_ROLES = {"system", "user", "assistant", "tool"}


def handle(state: State, req: ReceivedRequest) -> Reply:
    try:
        if req.method == "GET" and req.path.rstrip("/").endswith("/api/tags"):
            models = [
                {"name": m, "model": m, "modified_at": FIXED_TIME, "size": 0, "digest": ""}
                for m in state.models
            ]
            return json_reply(200, {"models": models})
        if req.method != "POST" or not req.path.rstrip("/").endswith("/api/chat"):
            raise ApiError(404, "404 page not found")
        body = validate(state, req.body)
        item = state.next_item()
        options = body.get("options") or {}
        prompt = Prompt(
            units=units_of([*body.get("tools", []), *body["messages"]]),
            model=body["model"],
            reload_token=f"{body['model']}|{options.get('num_ctx')}",
        )
        lookup = state.lookup(prompt)
        num_ctx = options.get("num_ctx")
        if body.get("truncate") is False and isinstance(num_ctx, int) and lookup.prompt_tokens > num_ctx:
            raise ApiError(
                400,
                f"the input length ({lookup.prompt_tokens} tokens) exceeds the context length ({num_ctx})",
            )
        if body.get("keep_alive") in (0, "0", "0s", "0m") and isinstance(state.cache, SingleSlot):
            state.cache.unload()  # unloaded after this reply: its KV slot goes with it
        return reply(state, body, item, lookup)
    except ApiError as exc:
        return json_reply(exc.status, {"error": exc.message}, exc.retry_headers())


def validate(state: State, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ApiError(400, "invalid request body")
    if not isinstance(body.get("model"), str):
        raise ApiError(400, "model is required")
    if body["model"] not in state.models:
        raise ApiError(404, f"model '{body['model']}' not found")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise ApiError(400, "json: cannot unmarshal messages: expected an array")
    for m in messages:
        if not isinstance(m, dict) or str(m.get("role", "")).lower() not in _ROLES:
            raise ApiError(400, f"invalid role in message {m!r:.60}")
        for call in m.get("tool_calls") or []:
            args = (call.get("function") or {}).get("arguments") if isinstance(call, dict) else None
            if not isinstance(args, dict):
                raise ApiError(
                    400,
                    "json: cannot unmarshal string into Go struct field ToolCallFunction.messages.tool_calls."
                    "function.arguments of type api.ToolCallFunctionArguments",
                )
        for image in m.get("images") or []:
            try:
                base64.b64decode(image, validate=True)
            except (binascii.Error, TypeError):
                raise ApiError(400, "illegal base64 data in images") from None
    return body


def metrics(lookup: Lookup, output: int) -> dict[str, int]:
    uncached = lookup.prompt_tokens - lookup.cached_tokens
    values = {
        "load_duration": LOAD_NS if lookup.reloaded else 0,
        "prompt_eval_count": lookup.prompt_tokens,
        "prompt_eval_duration": uncached * PREFILL_NS_PER_TOKEN,
        "eval_count": output,
        "eval_duration": output * EVAL_NS_PER_TOKEN,
    }
    values = {"total_duration": sum(v for k, v in values.items() if k.endswith("duration")), **values}
    return {k: v for k, v in values.items() if v}  # omitempty


def reply(state: State, body: dict[str, Any], item: ScriptItem, lookup: Lookup) -> Reply:
    model = body["model"]
    calls: list[dict[str, Any]] = []
    for j, call in enumerate(item.calls):
        entry: dict[str, Any] = {"function": {"index": j, "name": call.name, "arguments": call.arguments}}
        if "no_call_ids" not in item.quirks:  # older Ollama servers send calls without ids
            entry = {"id": call.id or state.next_id("call_"), **entry}
        calls.append(entry)
    output = out_tokens(item.text, item.thinking, *(c.arguments_json for c in item.calls))
    done = {"done": True, "done_reason": "stop", **metrics(lookup, output)}
    if body.get("stream") is False or "whole_reply" in item.quirks:
        message: dict[str, Any] = {"role": "assistant", "content": item.text}
        if item.thinking:
            message["thinking"] = item.thinking
        if calls:
            message["tool_calls"] = calls
        return json_reply(200, {"model": model, "created_at": FIXED_TIME, "message": message, **done})

    def line(message: dict[str, Any], extra: dict[str, Any] | None = None) -> bytes:
        value = {
            "model": model,
            "created_at": FIXED_TIME,
            "message": {"role": "assistant", "content": "", **message},
        }
        return orjson.dumps({**value, "done": False, **(extra or {})}) + b"\n"

    chunks = [line({"thinking": frag}) for frag in split_text(item.thinking)]
    chunks += [line({"content": frag}) for frag in split_text(item.text)]
    if calls:
        chunks.append(line({"tool_calls": calls}))
    if item.error is not None:  # mid-stream: Ollama sends an error line with the status already 200
        chunks.append(orjson.dumps({"error": item.error.message}) + b"\n")
    elif not item.cut:
        chunks.append(line({}, done))
    return Reply(headers={"content-type": "application/x-ndjson"}, chunks=chunks)
