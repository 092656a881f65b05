"""A fake OpenAI Responses server (``POST …/responses``, SSE with ``event:``/``data:`` pairs).

Reasoning comes out as ``reasoning`` items (summary + ``encrypted_content`` when the request
includes ``reasoning.encrypted_content``; the ``output_item.added`` copy of that content is cut
short, as the SDK warns, so a client must take the item from ``output_item.done``). Each
``function_call`` carries an ``fc_`` id bound to the reasoning item before it. Usage comes only
in the terminal event. The fake refuses what the API refuses: a function_call_output without its
call, an ``fc_`` id sent without its reasoning item, a reasoning item without encrypted content
unless both its response and this request were stored (``store`` defaults to true), one with
content it did not encrypt, and a reasoning item with nothing after it.
"""

from __future__ import annotations

from typing import Any

from nodwyn.fakes.base import (
    CREATED,
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
from nodwyn.fakes.cache import Lookup, Prompt, units_of
from nodwyn.fakes.openai_chat import check_auth, model_list
from nodwyn.fakes.script import ScriptItem


def handle(state: State, req: ReceivedRequest) -> Reply:
    try:
        check_auth(state, req)
        if req.method == "GET" and req.path.rstrip("/").endswith("/models"):
            return model_list(state)
        if req.method != "POST" or not req.path.rstrip("/").endswith("/responses"):
            raise ApiError(404, f"Invalid URL ({req.method} {req.path})")
        body = validate(state, req.body)
        item = state.next_item()
        key = body.get("prompt_cache_key") or req.headers.get("session-id")
        inputs = (
            body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
        )
        prompt = Prompt(
            units=units_of([body.get("instructions", ""), *body.get("tools", []), *inputs]),
            key=key if isinstance(key, str) else None,
            model=body["model"],
        )
        return stream(state, body, item, state.lookup(prompt))
    except ApiError as exc:
        kind = exc.type or error_kind(exc.status, "responses")
        return json_reply(
            exc.status,
            {"error": {"message": exc.message, "type": kind, "param": exc.param, "code": exc.code}},
            exc.retry_headers(),
        )


def validate(state: State, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        raise ApiError(400, "Missing required parameter: 'model'.", param="model")
    inputs = body.get("input")
    if isinstance(inputs, str):
        return body
    if not isinstance(inputs, list):
        raise ApiError(400, "Invalid type for 'input': expected a string or an array.", param="input")
    pairs: dict[str, str] = state.extra.setdefault("fc_reasoning", {})
    seen_calls: set[str] = set()
    seen_reasoning: set[str] = set()
    for i, it in enumerate(inputs):
        if not isinstance(it, dict):
            raise ApiError(400, f"Invalid type for 'input[{i}]'.", param=f"input[{i}]")
        kind = it.get("type", "message")
        if kind == "reasoning":
            rid = it.get("id")
            if not isinstance(rid, str):
                raise ApiError(400, f"Missing required parameter: 'input[{i}].id'.", param=f"input[{i}].id")
            stored = body.get("store", True) is not False and rid in state.extra.get(
                "stored_reasoning", set()
            )
            if "encrypted_content" not in it and not stored:
                raise ApiError(
                    404,
                    f"Item with id '{rid}' not found. Items are not persisted when `store` is set to false. "
                    "Try again with `store` set to true, or remove this item from your input.",
                    param="input",
                )
            if "encrypted_content" in it and not state.knows(it["encrypted_content"]):
                raise ApiError(
                    400, f"The encrypted content for item {rid} could not be verified.", param="input"
                )
            if i + 1 >= len(inputs):
                raise ApiError(
                    400,
                    f"Item '{rid}' of type 'reasoning' was provided without its required following item.",
                    param="input",
                )
            seen_reasoning.add(rid)
        elif kind == "function_call":
            if not isinstance(it.get("call_id"), str) or not isinstance(it.get("arguments"), str):
                raise ApiError(400, f"Missing required parameter: 'input[{i}].call_id'.", param=f"input[{i}]")
            fid = it.get("id")
            if isinstance(fid, str) and fid in pairs and pairs[fid] not in seen_reasoning:
                raise ApiError(
                    400,
                    f"Item '{fid}' of type 'function_call' was provided without its required "
                    f"'reasoning' item: '{pairs[fid]}'.",
                    param="input",
                )
            seen_calls.add(it["call_id"])
        elif kind == "function_call_output":
            if it.get("call_id") not in seen_calls:
                raise ApiError(
                    400,
                    f"No tool call found for function call output with call_id {it.get('call_id')}.",
                    param="input",
                )
        elif kind == "message":
            if it.get("role") not in {"user", "assistant", "system", "developer"}:
                raise ApiError(400, f"Invalid value for 'input[{i}].role'.", param=f"input[{i}].role")
        else:
            raise ApiError(400, f"Invalid value for 'input[{i}].type': '{kind}'.", param=f"input[{i}].type")
    return body


def stream(state: State, body: dict[str, Any], item: ScriptItem, lookup: Lookup) -> Reply:
    encrypted = "reasoning.encrypted_content" in (body.get("include") or [])
    pairs: dict[str, str] = state.extra.setdefault("fc_reasoning", {})
    seq = 0
    chunks: list[bytes] = []

    def emit(kind: str, **fields: Any) -> None:
        nonlocal seq
        chunks.append(sse({"type": kind, "sequence_number": seq, **fields}, event=kind))
        seq += 1

    blocks = [b for b in item.blocks if b.get("type") == "reasoning"]
    if item.thinking and not blocks:
        blocks = [{"type": "reasoning", "thinking": item.thinking, "position": 0}]
    resp = {
        "id": state.next_id("resp_"),
        "object": "response",
        "created_at": CREATED,
        "model": body["model"],
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []),
    }
    emit("response.created", response={**resp, "status": "in_progress", "output": [], "usage": None})
    emit("response.in_progress", response={**resp, "status": "in_progress", "output": [], "usage": None})
    output: list[dict[str, Any]] = []
    last_reasoning: str | None = None

    def reasoning(block: Any) -> None:
        nonlocal last_reasoning
        rid = state.next_id("rs_")
        text = str(block.get("thinking", ""))
        full: dict[str, Any] = {
            "id": rid,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": text}],
        }
        if encrypted:
            full["encrypted_content"] = state.mint("reasoning", text)
        index = len(output)
        added = {**full, "summary": []}
        if "encrypted_content" in full:
            added["encrypted_content"] = full["encrypted_content"][:10]
        emit("response.output_item.added", output_index=index, item=added)
        part = {"type": "summary_text", "text": ""}
        emit(
            "response.reasoning_summary_part.added",
            item_id=rid,
            output_index=index,
            summary_index=0,
            part=part,
        )
        for frag in split_text(text):
            emit(
                "response.reasoning_summary_text.delta",
                item_id=rid,
                output_index=index,
                summary_index=0,
                delta=frag,
            )
        emit(
            "response.reasoning_summary_text.done",
            item_id=rid,
            output_index=index,
            summary_index=0,
            text=text,
        )
        emit(
            "response.reasoning_summary_part.done",
            item_id=rid,
            output_index=index,
            summary_index=0,
            part={"type": "summary_text", "text": text},
        )
        emit("response.output_item.done", output_index=index, item=full)
        output.append(full)
        last_reasoning = rid
        if body.get("store", True) is not False:  # the API keeps stored responses' items by id
            state.extra.setdefault("stored_reasoning", set()).add(rid)

    def at(position: int) -> None:
        for b in blocks:
            if int(b.get("position", 0)) == position:
                reasoning(b)

    at(0)
    if item.text:
        mid = state.next_id("msg_")
        index = len(output)
        head: dict[str, Any] = {
            "id": mid,
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        if item.phase is not None:
            head["phase"] = item.phase
        emit("response.output_item.added", output_index=index, item=head)
        part = {"type": "output_text", "text": "", "annotations": []}
        emit("response.content_part.added", item_id=mid, output_index=index, content_index=0, part=part)
        for frag in split_text(item.text):
            emit(
                "response.output_text.delta",
                item_id=mid,
                output_index=index,
                content_index=0,
                delta=frag,
                logprobs=[],
            )
        emit(
            "response.output_text.done",
            item_id=mid,
            output_index=index,
            content_index=0,
            text=item.text,
            logprobs=[],
        )
        done_part = {"type": "output_text", "text": item.text, "annotations": []}
        emit("response.content_part.done", item_id=mid, output_index=index, content_index=0, part=done_part)
        message = {**head, "status": "completed", "content": [done_part]}
        emit("response.output_item.done", output_index=index, item=message)
        output.append(message)
    arg_texts = []
    for j, call in enumerate(item.calls):
        if j:
            at(j)
        fid = state.next_id("fc_")
        if last_reasoning is not None:
            pairs[fid] = last_reasoning
        args = call.arguments_json
        arg_texts.append(args)
        index = len(output)
        head = {
            "id": fid,
            "type": "function_call",
            "status": "in_progress",
            "call_id": call.id or state.next_id("call_"),
            "name": call.name,
            "arguments": "",
        }
        emit("response.output_item.added", output_index=index, item=head)
        for frag in split_text(args, 2):
            emit("response.function_call_arguments.delta", item_id=fid, output_index=index, delta=frag)
        emit("response.function_call_arguments.done", item_id=fid, output_index=index, arguments=args)
        done = {**head, "status": "completed", "arguments": args}
        emit("response.output_item.done", output_index=index, item=done)
        output.append(done)
    if item.error is not None:
        e = item.error
        emit(
            "error",
            code=e.code or e.type or error_kind(e.status, "responses"),
            message=e.message,
            param=e.param,
        )
        return event_stream(chunks)
    if item.cut:
        return event_stream(chunks)
    reasoning_tokens = out_tokens(*(str(b.get("thinking", "")) for b in blocks))
    completion = out_tokens(item.text, *arg_texts) + reasoning_tokens
    usage = {
        "input_tokens": lookup.prompt_tokens,
        "input_tokens_details": {
            "cached_tokens": lookup.cached_tokens,
            "cache_write_tokens": lookup.cache_write_tokens,
        },
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": lookup.prompt_tokens + completion,
    }
    final = {**resp, "status": "completed", "output": [] if item.empty_output else output, "usage": usage}
    if body.get("stream") is not True or "whole_reply" in item.quirks:
        return json_reply(200, final)
    emit("response.completed", response=final)
    if "done_marker" in item.quirks:  # OpenRouter's /responses ends so after the terminal event
        chunks.append(sse(b"[DONE]"))
    return event_stream(chunks)
