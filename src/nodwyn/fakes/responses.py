"""A fake OpenAI Responses server (``POST …/responses``, SSE with ``event:``/``data:`` pairs).

Reasoning comes out as ``reasoning`` items (summary + ``encrypted_content`` when the request
includes ``reasoning.encrypted_content``; the ``output_item.added`` copy of that content is cut
short, as the SDK warns, so a client must take the item from ``output_item.done``). Each
``function_call`` carries an ``fc_`` id bound to the reasoning item before it. Usage comes only
in the terminal event. The fake refuses what the API refuses: a function_call_output without its
call, an ``fc_`` id sent without its reasoning item, a reasoning item without encrypted content
unless both its response and this request were stored (``store`` defaults to true), one with
content it did not encrypt, and a reasoning item with nothing after it. Asked by
``prompt_cache_options.comparison_response_id``, the terminal response carries
``prompt_cache_diagnostics`` from the fake's own cache state (``fakes.diagnosis``, ADR 0312).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
    openai_error,
    out_tokens,
    split_text,
    sse,
)
from nodwyn.fakes.cache import BLOCK, MIN_CACHED, Lookup, Prompt, unit, units_of
from nodwyn.fakes.diagnosis import Seen, compare, remember
from nodwyn.fakes.openai_chat import check_auth, model_list
from nodwyn.fakes.script import ScriptCall, ScriptError, ScriptItem


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
        lookup = state.lookup(prompt)
        return stream(state, body, item, lookup, _diagnosis(state, body, key, inputs, lookup))
    except ApiError as exc:
        return json_reply(exc.status, {"error": openai_error(exc, "responses")}, exc.retry_headers())


def _diagnosis(
    state: State, body: dict[str, Any], key: Any, inputs: list[Any], lookup: Lookup
) -> tuple[Seen, dict[str, Any] | None]:
    """What a later comparison needs of this request, and the ``prompt_cache_diagnostics`` asked
    for by ``prompt_cache_options.comparison_response_id`` (None when not asked)."""
    reasoning: dict[str, Any] = body["reasoning"] if isinstance(body.get("reasoning"), dict) else {}
    total = lookup.prompt_tokens
    seen = Seen(
        sections=(
            ("model_changed", unit(body["model"])),
            ("prompt_cache_key_changed", unit(key)),
            ("reasoning_effort_changed", unit(reasoning.get("effort"))),
            ("input_changed", unit(body.get("instructions", ""))),
            ("tools_changed", b"".join(units_of(body.get("tools", [])))),
            ("input_changed", b"".join(units_of(inputs))),
        ),
        reusable=total // BLOCK * BLOCK if total >= MIN_CACHED else 0,
    )
    options = body.get("prompt_cache_options")
    against = options.get("comparison_response_id") if isinstance(options, dict) else None
    if not isinstance(against, str):
        return seen, None
    verdict = compare(state, against, seen, lookup.cached_tokens)
    if verdict.reason is None:
        return seen, {"type": "cache_hit"}
    if verdict.reason == "not found":
        return seen, {"type": "comparison_response_not_found"}
    if verdict.reason == "unavailable":
        return seen, {"type": "unavailable"}
    return seen, {"type": "cache_miss", "reason": verdict.reason, "cache_missed_tokens": verdict.missed}


class _Inputs:
    """What the input items seen so far bind: call ids, and reasoning ids (an ``fc_`` id needs its own)."""

    def __init__(self, state: State, body: dict[str, Any], inputs: list[Any]) -> None:
        self.state = state
        self.body = body
        self.inputs = inputs
        self.pairs: dict[str, str] = state.extra.setdefault("fc_reasoning", {})
        self.calls: set[str] = set()
        self.reasoning: set[str] = set()

    def check(self, i: int, it: dict[str, Any]) -> None:
        kind = it.get("type", "message")
        check = _INPUT_CHECKS.get(kind)
        if check is None:
            raise ApiError(400, f"Invalid value for 'input[{i}].type': '{kind}'.", param=f"input[{i}].type")
        check(self, i, it)

    def reasoning_item(self, i: int, it: dict[str, Any]) -> None:
        rid = it.get("id")
        if not isinstance(rid, str):
            raise ApiError(400, f"Missing required parameter: 'input[{i}].id'.", param=f"input[{i}].id")
        stored = self.body.get("store", True) is not False and rid in self.state.extra.get(
            "stored_reasoning", set()
        )
        if "encrypted_content" not in it and not stored:
            raise ApiError(
                404,
                f"Item with id '{rid}' not found. Items are not persisted when `store` is set to false. "
                "Try again with `store` set to true, or remove this item from your input.",
                param="input",
            )
        if "encrypted_content" in it and not self.state.knows(it["encrypted_content"]):
            raise ApiError(400, f"The encrypted content for item {rid} could not be verified.", param="input")
        if i + 1 >= len(self.inputs):
            raise ApiError(
                400,
                f"Item '{rid}' of type 'reasoning' was provided without its required following item.",
                param="input",
            )
        self.reasoning.add(rid)

    def function_call(self, i: int, it: dict[str, Any]) -> None:
        if not isinstance(it.get("call_id"), str) or not isinstance(it.get("arguments"), str):
            raise ApiError(400, f"Missing required parameter: 'input[{i}].call_id'.", param=f"input[{i}]")
        fid = it.get("id")
        if isinstance(fid, str) and fid in self.pairs and self.pairs[fid] not in self.reasoning:
            raise ApiError(
                400,
                f"Item '{fid}' of type 'function_call' was provided without its required "
                f"'reasoning' item: '{self.pairs[fid]}'.",
                param="input",
            )
        self.calls.add(it["call_id"])

    def function_call_output(self, i: int, it: dict[str, Any]) -> None:
        if it.get("call_id") not in self.calls:
            raise ApiError(
                400,
                f"No tool call found for function call output with call_id {it.get('call_id')}.",
                param="input",
            )

    def message(self, i: int, it: dict[str, Any]) -> None:
        if it.get("role") not in {"user", "assistant", "system", "developer"}:
            raise ApiError(400, f"Invalid value for 'input[{i}].role'.", param=f"input[{i}].role")


_INPUT_CHECKS: dict[str, Callable[[_Inputs, int, dict[str, Any]], None]] = {
    "reasoning": _Inputs.reasoning_item,
    "function_call": _Inputs.function_call,
    "function_call_output": _Inputs.function_call_output,
    "message": _Inputs.message,
}


def validate(state: State, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        raise ApiError(400, "Missing required parameter: 'model'.", param="model")
    inputs = body.get("input")
    if isinstance(inputs, str):
        return body
    if not isinstance(inputs, list):
        raise ApiError(400, "Invalid type for 'input': expected a string or an array.", param="input")
    seen = _Inputs(state, body, inputs)
    for i, it in enumerate(inputs):
        if not isinstance(it, dict):
            raise ApiError(400, f"Invalid type for 'input[{i}]'.", param=f"input[{i}]")
        seen.check(i, it)
    return body


class _Reply:
    """One reply being written: its event chunks and sequence numbers, the output items so far,
    and the last reasoning item (an ``fc_`` id is bound to it)."""

    def __init__(self, state: State, body: dict[str, Any], item: ScriptItem) -> None:
        self.state = state
        self.body = body
        self.item = item
        self.encrypted = "reasoning.encrypted_content" in (body.get("include") or [])
        self.pairs: dict[str, str] = state.extra.setdefault("fc_reasoning", {})
        self.chunks: list[bytes] = []
        self.seq = 0
        self.output: list[dict[str, Any]] = []
        self.last_reasoning: str | None = None
        self.diagnostics: dict[str, Any] | None = None  # prompt_cache_diagnostics, when asked
        self.blocks: list[Mapping[str, Any]] = [b for b in item.blocks if b.get("type") == "reasoning"]
        if item.thinking and not self.blocks:
            self.blocks = [{"type": "reasoning", "thinking": item.thinking, "position": 0}]
        self.resp = {
            "id": state.next_id("resp_"),
            "object": "response",
            "created_at": CREATED,
            "model": body["model"],
            "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools", []),
        }

    def emit(self, kind: str, **fields: Any) -> None:
        self.chunks.append(sse({"type": kind, "sequence_number": self.seq, **fields}, event=kind))
        self.seq += 1

    def start(self) -> None:
        pending = {**self.resp, "status": "in_progress", "output": [], "usage": None}
        self.emit("response.created", response=pending)
        self.emit("response.in_progress", response=pending)

    def reasoning_at(self, position: int) -> None:
        for b in self.blocks:
            if int(b.get("position", 0)) == position:
                self.reasoning(str(b.get("thinking", "")))

    def reasoning(self, text: str) -> None:
        """A reasoning item; its ``output_item.added`` copy of the encrypted content is cut short."""
        rid = self.state.next_id("rs_")
        full: dict[str, Any] = {
            "id": rid,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": text}],
        }
        if self.encrypted:
            full["encrypted_content"] = self.state.mint("reasoning", text)
        index = len(self.output)
        added = {**full, "summary": []}
        if "encrypted_content" in full:
            added["encrypted_content"] = full["encrypted_content"][:10]
        self.emit("response.output_item.added", output_index=index, item=added)
        at = {"item_id": rid, "output_index": index, "summary_index": 0}
        self.emit("response.reasoning_summary_part.added", **at, part={"type": "summary_text", "text": ""})
        for frag in split_text(text):
            self.emit("response.reasoning_summary_text.delta", **at, delta=frag)
        self.emit("response.reasoning_summary_text.done", **at, text=text)
        self.emit("response.reasoning_summary_part.done", **at, part={"type": "summary_text", "text": text})
        self.emit("response.output_item.done", output_index=index, item=full)
        self.output.append(full)
        self.last_reasoning = rid
        if self.body.get("store", True) is not False:  # the API keeps stored responses' items by id
            self.state.extra.setdefault("stored_reasoning", set()).add(rid)

    def message(self, text: str) -> None:
        mid = self.state.next_id("msg_")
        index = len(self.output)
        head: dict[str, Any] = {
            "id": mid,
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        if self.item.phase is not None:
            head["phase"] = self.item.phase
        self.emit("response.output_item.added", output_index=index, item=head)
        at = {"item_id": mid, "output_index": index, "content_index": 0}
        part = {"type": "output_text", "text": "", "annotations": []}
        self.emit("response.content_part.added", **at, part=part)
        for frag in split_text(text):
            self.emit("response.output_text.delta", **at, delta=frag, logprobs=[])
        self.emit("response.output_text.done", **at, text=text, logprobs=[])
        done_part = {"type": "output_text", "text": text, "annotations": []}
        self.emit("response.content_part.done", **at, part=done_part)
        message = {**head, "status": "completed", "content": [done_part]}
        self.emit("response.output_item.done", output_index=index, item=message)
        self.output.append(message)

    def function_call(self, call: ScriptCall) -> str:
        """A function_call item bound to the reasoning before it; returns its arguments."""
        fid = self.state.next_id("fc_")
        if self.last_reasoning is not None:
            self.pairs[fid] = self.last_reasoning
        args = call.arguments_json
        index = len(self.output)
        head = {
            "id": fid,
            "type": "function_call",
            "status": "in_progress",
            "call_id": call.id or self.state.next_id("call_"),
            "name": call.name,
            "arguments": "",
        }
        self.emit("response.output_item.added", output_index=index, item=head)
        for frag in split_text(args, 2):
            self.emit("response.function_call_arguments.delta", item_id=fid, output_index=index, delta=frag)
        self.emit("response.function_call_arguments.done", item_id=fid, output_index=index, arguments=args)
        done = {**head, "status": "completed", "arguments": args}
        self.emit("response.output_item.done", output_index=index, item=done)
        self.output.append(done)
        return args

    def error(self, e: ScriptError) -> Reply:
        code = e.code or e.type or error_kind(e.status, "responses")
        self.emit("error", code=code, message=e.message, param=e.param)
        return event_stream(self.chunks)

    def usage(self, lookup: Lookup, arg_texts: list[str]) -> dict[str, Any]:
        reasoning_tokens = out_tokens(*(str(b.get("thinking", "")) for b in self.blocks))
        completion = out_tokens(self.item.text, *arg_texts) + reasoning_tokens
        return {
            "input_tokens": lookup.prompt_tokens,
            "input_tokens_details": {
                "cached_tokens": lookup.cached_tokens,
                "cache_write_tokens": lookup.cache_write_tokens,
            },
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
            "total_tokens": lookup.prompt_tokens + completion,
        }

    def completed(self, usage: dict[str, Any]) -> Reply:
        """The terminal event (or the whole reply as one JSON object, when not streamed)."""
        output = [] if self.item.empty_output else self.output
        final = {**self.resp, "status": "completed", "output": output, "usage": usage}
        if self.diagnostics is not None:
            options = self.body["prompt_cache_options"]
            final["prompt_cache_options"] = {"mode": "implicit", "ttl": "30m", **options}
            final["prompt_cache_diagnostics"] = self.diagnostics
        if self.body.get("stream") is not True or "whole_reply" in self.item.quirks:
            return json_reply(200, final)
        self.emit("response.completed", response=final)
        if "done_marker" in self.item.quirks:  # OpenRouter's /responses ends so after the terminal event
            self.chunks.append(sse(b"[DONE]"))
        return event_stream(self.chunks)


def stream(
    state: State,
    body: dict[str, Any],
    item: ScriptItem,
    lookup: Lookup,
    diagnosis: tuple[Seen, dict[str, Any] | None],
) -> Reply:
    """Reasoning at position 0, the text, then each call (with the reasoning placed before it)."""
    reply = _Reply(state, body, item)
    seen, reply.diagnostics = diagnosis
    remember(state, reply.resp["id"], seen)
    reply.start()
    reply.reasoning_at(0)
    if item.text:
        reply.message(item.text)
    arg_texts = []
    for j, call in enumerate(item.calls):
        if j:
            reply.reasoning_at(j)
        arg_texts.append(reply.function_call(call))
    if item.error is not None:
        return reply.error(item.error)
    if item.cut:
        return event_stream(reply.chunks)
    return reply.completed(reply.usage(lookup, arg_texts))
