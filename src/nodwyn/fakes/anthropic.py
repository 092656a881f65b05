"""A fake Anthropic Messages server (``POST /v1/messages``, SSE).

It caches only when asked (``cache_control`` at the top level or on blocks, at most four in
all) and reports usage as Anthropic does: ``input_tokens`` is the tail after the last breakpoint,
with ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` beside it. Thinking blocks
come out signed, redacted thinking with opaque data; a block sent back must be one this server
gave, unchanged, else 400 — unless the request opts in to ``drop_block`` with the beta header,
when the block is dropped and named in ``input_transformations``. It also refuses a missing
``anthropic-version`` or ``max_tokens`` and unpaired ``tool_use``/``tool_result`` blocks.
"""

from __future__ import annotations

from typing import Any

from nodwyn.fakes.base import (
    FIXED_TIME,
    ApiError,
    ReceivedRequest,
    Reply,
    State,
    error_kind,
    event_stream,
    json_reply,
    out_tokens,
    split_text,
    sse,
)
from nodwyn.fakes.cache import Lookup, Prompt, unit
from nodwyn.fakes.script import ScriptItem

BINDING_BETA = "thinking-binding-controls-2026-08-01"


def handle(state: State, req: ReceivedRequest) -> Reply:
    try:
        if state.api_key is not None and req.headers.get("x-api-key") != state.api_key:
            raise ApiError(401, "invalid x-api-key")
        if "anthropic-version" not in req.headers:
            raise ApiError(400, "anthropic-version: header is required")
        if req.method == "GET" and req.path.rstrip("/").endswith("/models"):
            data = [
                {"id": m, "type": "model", "display_name": m, "created_at": FIXED_TIME} for m in state.models
            ]
            return json_reply(
                200, {"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]}
            )
        if req.method != "POST" or not req.path.rstrip("/").endswith("/messages"):
            raise ApiError(404, f"Not found: {req.method} {req.path}")
        body, dropped = validate(state, req)
        item = state.next_item()
        prompt, ttl = prompt_of(body)
        return stream(state, body, item, state.lookup(prompt), ttl, dropped)
    except ApiError as exc:
        headers = {"request-id": "req_fake", **exc.retry_headers()}
        kind = exc.type or error_kind(exc.status, "anthropic")
        body = {"type": "error", "error": {"type": kind, "message": exc.message}, "request_id": "req_fake"}
        return json_reply(exc.status, body, headers)


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def validate(state: State, req: ReceivedRequest) -> tuple[dict[str, Any], list[dict[str, str]]]:
    body = req.body
    if not isinstance(body, dict):
        raise ApiError(400, "The request body is not valid JSON.")
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            raise ApiError(400, f"{name}: Field required")
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "messages: at least one message is required")
    marks = sum(1 for t in body.get("tools", []) if isinstance(t, dict) and "cache_control" in t)
    marks += sum(1 for b in _blocks(body.get("system", [])) if isinstance(b, dict) and "cache_control" in b)
    marks += sum(
        1 for m in messages for b in _blocks(m.get("content")) if isinstance(b, dict) and "cache_control" in b
    )
    marks += 1 if "cache_control" in body else 0
    if marks > 4:
        raise ApiError(400, f"A maximum of 4 blocks with cache_control may be provided. Found {marks}.")
    thinking: dict[str, Any] = body["thinking"] if isinstance(body.get("thinking"), dict) else {}
    binding = thinking.get("block_binding")
    betas = {b.strip() for b in req.headers.get("anthropic-beta", "").split(",")}
    if binding is not None and BINDING_BETA not in betas:
        raise ApiError(400, "thinking.block_binding: Extra inputs are not permitted")
    drop = isinstance(binding, dict) and binding.get("prefix_mismatch_behavior") == "drop_block"
    signatures: dict[str, str] = state.extra.setdefault("signatures", {})
    dropped: list[dict[str, str]] = []
    previous_uses: set[str] = set()
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in {"user", "assistant", "system"}:
            raise ApiError(400, f"messages.{i}.role: Input should be 'user', 'assistant' or 'system'")
        blocks = _blocks(m.get("content"))
        uses: set[str] = set()
        results: set[str] = set()
        kept = []
        for j, b in enumerate(blocks):
            kind = b.get("type") if isinstance(b, dict) else None
            if kind == "tool_use":
                if not isinstance(b.get("input"), dict):
                    raise ApiError(
                        400, f"messages.{i}.content.{j}.tool_use.input: Input should be a valid dictionary"
                    )
                uses.add(str(b.get("id")))
            elif kind == "tool_result":
                if b.get("tool_use_id") not in previous_uses:
                    raise ApiError(
                        400,
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{b.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                        "`tool_use` block in the previous message.",
                    )
                results.add(b["tool_use_id"])
            elif kind in {"thinking", "redacted_thinking"}:
                if m["role"] != "assistant":
                    raise ApiError(
                        400,
                        f"messages.{i}.content.{j}: thinking blocks may only appear in assistant messages",
                    )
                good = (
                    signatures.get(str(b.get("signature"))) == b.get("thinking")
                    if kind == "thinking"
                    else state.knows(b.get("data"))
                )
                if not good:
                    if drop:
                        dropped.append(
                            {
                                "type": "thinking_dropped",
                                "path": f"messages.{i}.content.{j}",
                                "reason": "prefix_mismatch",
                            }
                        )
                        continue
                    raise ApiError(
                        400,
                        f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block. "
                        "The block is bound to a different conversation. Remove the block, or set "
                        '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block".',
                    )
            kept.append(b)
        missing = previous_uses - results
        if missing:
            raise ApiError(
                400,
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                f"{', '.join(sorted(missing))}. Each `tool_use` block must have a corresponding "
                "`tool_result` block in the next message.",
            )
        previous_uses = uses
        if len(kept) != len(blocks):
            messages[i] = {**m, "content": kept}
    if previous_uses:
        raise ApiError(
            400,
            f"messages.{len(messages) - 1}: `tool_use` ids were found without `tool_result` blocks "
            f"immediately after: {', '.join(sorted(previous_uses))}.",
        )
    return body, dropped


def prompt_of(body: dict[str, Any]) -> tuple[Prompt, str]:
    units: list[bytes] = []
    marks: list[int] = []
    ttl = "5m"

    def add(value: dict[str, Any], extra: dict[str, Any] | None = None) -> None:
        nonlocal ttl
        if "cache_control" in value:
            ttl = str((value["cache_control"] or {}).get("ttl", ttl))
            value = {k: v for k, v in value.items() if k != "cache_control"}
            units.append(unit({**(extra or {}), **value}))
            marks.append(len(units))
        else:
            units.append(unit({**(extra or {}), **value}))

    for tool in body.get("tools", []):
        add(tool)
    for block in _blocks(body.get("system", [])):
        add(block, {"role": "system"})
    for m in body["messages"]:
        for block in _blocks(m.get("content")):
            add(block, {"role": m["role"]})
    if "cache_control" in body and units:
        ttl = str((body["cache_control"] or {}).get("ttl", ttl))
        marks.append(len(units))
    return Prompt(units=tuple(units), breakpoints=tuple(marks), model=body["model"]), ttl


def stream(
    state: State,
    body: dict[str, Any],
    item: ScriptItem,
    lookup: Lookup,
    ttl: str,
    dropped: list[dict[str, str]],
) -> Reply:
    signatures: dict[str, str] = state.extra.setdefault("signatures", {})
    chunks: list[bytes] = []

    def emit(kind: str, **fields: Any) -> None:
        chunks.append(sse({"type": kind, **fields}, event=kind))

    write = lookup.cache_write_tokens
    usage = {
        "input_tokens": lookup.uncached_tokens,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": lookup.cached_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": 0 if ttl == "1h" else write,
            "ephemeral_1h_input_tokens": write if ttl == "1h" else 0,
        },
        "output_tokens": 1,
    }
    message: dict[str, Any] = {
        "id": state.next_id("msg_"),
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": body["model"],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    late = "delta_transformations" in item.quirks  # named on message_delta instead
    if dropped and not late:
        message["input_transformations"] = dropped
    emit("message_start", message=message)
    emit("ping")
    blocks = [b for b in item.blocks if b.get("type") in {"thinking", "redacted_thinking"}]
    if item.thinking and not blocks:
        blocks = [{"type": "thinking", "thinking": item.thinking, "position": 0}]
    index = 0
    texts: list[str] = []
    content: list[dict[str, Any]] = []  # the same blocks, whole, for a reply that is not streamed

    def block(b: Any) -> None:
        nonlocal index
        if b.get("type") == "redacted_thinking":
            redacted = {"type": "redacted_thinking", "data": state.mint("redacted")}
            content.append(redacted)
            emit("content_block_start", index=index, content_block=redacted)
        else:
            text = str(b.get("thinking", ""))
            texts.append(text)
            emit(
                "content_block_start",
                index=index,
                content_block={"type": "thinking", "thinking": "", "signature": ""},
            )
            for frag in split_text(text):
                emit("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": frag})
            signature = state.mint("signature", text)
            signatures[signature] = text
            content.append({"type": "thinking", "thinking": text, "signature": signature})
            emit(
                "content_block_delta", index=index, delta={"type": "signature_delta", "signature": signature}
            )
        emit("content_block_stop", index=index)
        index += 1

    def at(position: int) -> None:
        for b in blocks:
            if int(b.get("position", 0)) == position:
                block(b)

    at(0)
    if item.text:
        content.append({"type": "text", "text": item.text})
        emit("content_block_start", index=index, content_block={"type": "text", "text": ""})
        for frag in split_text(item.text):
            emit("content_block_delta", index=index, delta={"type": "text_delta", "text": frag})
        emit("content_block_stop", index=index)
        index += 1
    args_texts = []
    for j, call in enumerate(item.calls):
        if j:
            at(j)
        args = call.arguments_json
        args_texts.append(args)
        head = {"type": "tool_use", "id": call.id or state.next_id("toolu_"), "name": call.name, "input": {}}
        content.append({**head, "input": call.arguments})
        emit("content_block_start", index=index, content_block=head)
        for frag in split_text(args, 2):
            emit("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": frag})
        emit("content_block_stop", index=index)
        index += 1
    if item.error is not None:
        emit(
            "error",
            error={
                "type": item.error.type or error_kind(item.error.status, "anthropic"),
                "message": item.error.message,
            },
        )
        return event_stream(chunks)
    if item.cut:
        return event_stream(chunks)
    output = out_tokens(item.text, *texts, *args_texts)
    final_usage = {k: v for k, v in usage.items() if k != "cache_creation"} | {"output_tokens": output}
    stop = "tool_use" if item.calls else "end_turn"
    if body.get("stream") is not True or "whole_reply" in item.quirks:  # the whole message as one object
        whole = {
            **message,
            "content": content,
            "stop_reason": stop,
            "usage": {**usage, "output_tokens": output},
        }
        return json_reply(200, whole, {"request-id": "req_fake"})
    extra: dict[str, Any] = {"input_transformations": dropped} if dropped and late else {}
    emit("message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage=final_usage, **extra)
    emit("message_stop")
    return event_stream(chunks, {"request-id": "req_fake"})
