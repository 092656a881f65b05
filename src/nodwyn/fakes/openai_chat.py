"""A fake OpenAI chat-completions server, with the server families' differences.

``family`` (None = ``compatible``) decides what a real server of that kind does: the reasoning
field it streams (``reasoning_content``, or ``reasoning`` for cerebras and vllm, plus
``reasoning_details`` for openrouter), how it reports usage (``prompt_cache_hit_tokens`` for
deepseek, ``timings.cache_n`` for llamacpp, ``cached_tokens`` omitted when 0 for vllm, usage
always for openrouter, else only with ``stream_options.include_usage``), its error shape
(cerebras unwrapped, openrouter with ``code``/``metadata``) and what it refuses: every family
refuses orphan tool results and calls without results; cerebras refuses ``reasoning_content``;
deepseek (thinking mode) requires it on tool-call turns; openrouter refuses signed or encrypted
``reasoning_details`` that it did not give.
"""

from __future__ import annotations

import base64
import binascii
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import orjson

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
from nodwyn.fakes.cache import Lookup, Prompt, units_of
from nodwyn.fakes.openrouter import check_details, detail_fragments, merged_details
from nodwyn.fakes.script import Flood, ScriptCall, ScriptError, ScriptItem

_UNANSWERED = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
    "'tool_call_id'. The following tool_call_ids did not have response messages: "
)
_REASONING_FIELD = {"cerebras": "reasoning", "vllm": "reasoning", "openrouter": "reasoning"}


def handle(state: State, req: ReceivedRequest) -> Reply:
    try:
        check_auth(state, req)
        if req.method == "GET" and req.path.rstrip("/").endswith("/models"):
            return model_list(state)
        if req.method != "POST" or not req.path.rstrip("/").endswith("/chat/completions"):
            raise ApiError(404, f"Invalid URL ({req.method} {req.path})", type="invalid_request_error")
        body = validate(state, req.body)
        item = state.next_item()
        lookup = state.lookup(prompt_of(body, req))
        return stream(state, body, item, lookup)
    except ApiError as exc:
        return error_reply(state, exc)


def check_auth(state: State, req: ReceivedRequest) -> None:
    if state.api_key is not None and req.headers.get("authorization") != f"Bearer {state.api_key}":
        raise ApiError(
            401, "Incorrect API key provided.", type="invalid_request_error", code="invalid_api_key"
        )


def model_list(state: State) -> Reply:
    """``GET /v1/models`` as OpenAI answers it (chat completions and Responses share it)."""
    data = [
        {
            "id": m,
            "object": "model",
            "created": CREATED,
            "owned_by": "nodwyn-fake",
            **state.model_fields.get(m, {}),
        }
        for m in state.models
    ]
    return json_reply(200, {"object": "list", "data": data})


def session_key(body: dict[str, Any], req: ReceivedRequest) -> str | None:
    named = (
        body.get("session_id"),
        req.headers.get("x-session-id"),
        body.get("prompt_cache_key"),
        req.headers.get("session-id"),
        req.headers.get("x-session-affinity"),
        req.headers.get("x-baseten-session-id"),
    )
    return next((v for v in named if isinstance(v, str) and v), None)


def prompt_of(body: dict[str, Any], req: ReceivedRequest) -> Prompt:
    units = units_of([*body.get("tools", []), *body["messages"]])
    return Prompt(units=units, key=session_key(body, req), model=body["model"], reload_token=body["model"])


_ROLES = {"system", "developer", "user", "assistant", "tool"}


def _check_top(body: dict[str, Any]) -> list[Any]:
    """The body's own fields; returns its messages."""
    if not isinstance(body.get("model"), str):
        raise ApiError(400, "you must provide a model parameter", param="model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError(
            400, "Invalid 'messages': empty array. Expected an array with minimum length 1.", param="messages"
        )
    if "stream_options" in body and body.get("stream") is not True:
        raise ApiError(
            400,
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            param="stream_options",
        )
    return messages


class _Turns:
    """The messages checked in order: each tool call answered by tool messages before the next turn."""

    def __init__(self, state: State, body: dict[str, Any]) -> None:
        self.state = state
        self.family = state.family or "compatible"
        self.thinking_mode = not (
            isinstance(body.get("thinking"), dict) and body["thinking"].get("type") == "disabled"
        )
        self.pending: list[str] = []

    def message(self, i: int, m: Any) -> None:
        if not isinstance(m, dict) or m.get("role") not in _ROLES:
            raise ApiError(400, f"Invalid value for 'messages[{i}].role'.", param=f"messages[{i}].role")
        role = m["role"]
        if self.family == "cerebras" and "reasoning_content" in m:
            path = f"messages.{i}.{role}.reasoning_content"
            raise ApiError(
                400,
                f"{path}: property '{path}' is unsupported",
                type="invalid_request_error",
                param="validation_error",
                code="wrong_api_format",
            )
        if role == "tool":
            self.tool(i, m)
            return
        if self.pending:
            raise ApiError(400, _UNANSWERED + ", ".join(self.pending), param=f"messages.[{i}].role")
        if role == "user":
            check_user_content(m.get("content"), i)
        if role == "assistant":
            self.assistant(i, m)

    def tool(self, i: int, m: dict[str, Any]) -> None:
        if m.get("tool_call_id") not in self.pending:
            raise ApiError(
                400,
                "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                "with 'tool_calls'.",
                param=f"messages.[{i}].role",
            )
        self.pending.remove(m["tool_call_id"])

    def assistant(self, i: int, m: dict[str, Any]) -> None:
        calls = m.get("tool_calls") or []
        # llama.cpp's server refuses a message without a content field and calls; an empty or
        # null content it reads as empty (common/chat.cpp, issue 8367)
        if "content" not in m and not calls and self.family == "llamacpp":
            raise ApiError(400, "Expected 'content' or 'tool_calls'", param=f"messages[{i}]")
        for j, call in enumerate(calls):
            self.pending.append(_call_id(call, f"messages[{i}].tool_calls[{j}]"))
        if self.family == "deepseek" and self.thinking_mode and calls and "reasoning_content" not in m:
            raise ApiError(
                400,
                "The reasoning_content in the thinking mode must be passed back to the API.",
                code="invalid_request_error",
            )
        if self.family == "openrouter" and m.get("reasoning_details") is not None:
            check_details(self.state, m["reasoning_details"], i)


def _call_id(call: Any, path: str) -> str:
    """The id of a well-formed tool call sent back."""
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(fn, dict) or not isinstance(call.get("id"), str):
        raise ApiError(400, f"Missing required parameter: '{path}.id'.")
    if not isinstance(fn.get("arguments"), str):
        raise ApiError(
            400,
            f"Invalid type for '{path}.function.arguments': expected a string.",
            param=f"{path}.function.arguments",
            code="invalid_type",
        )
    return str(call["id"])


def validate(state: State, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ApiError(400, "We could not parse the JSON body of your request.", type="invalid_request_error")
    turns = _Turns(state, body)
    for i, m in enumerate(_check_top(body)):
        turns.message(i, m)
    if turns.pending:
        raise ApiError(400, _UNANSWERED + ", ".join(turns.pending), param="messages")
    return body


def check_user_content(content: Any, i: int) -> None:
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise ApiError(400, f"Invalid type for 'messages[{i}].content'.", param=f"messages[{i}].content")
    for j, part in enumerate(content):
        if isinstance(part, dict) and part.get("type") == "image_url":
            url = (part.get("image_url") or {}).get("url", "")
            if isinstance(url, str) and url.startswith("data:"):
                try:
                    base64.b64decode(url.split(",", 1)[1], validate=True)
                except (IndexError, binascii.Error):
                    raise ApiError(
                        400, "Invalid image data URL.", param=f"messages[{i}].content[{j}].image_url.url"
                    ) from None


def error_reply(state: State, exc: ApiError) -> Reply:
    if state.family == "cerebras":
        body: dict[str, Any] = openai_error(exc, "openai-chat")
    elif state.family == "openrouter":
        meta: dict[str, Any] = {"provider_name": "Fake"}
        if exc.type == "openrouter-upstream":
            raw = f"{exc.param}: Invalid signature in thinking block"
            meta["raw"] = orjson.dumps({"message": raw}).decode()
        body = {"error": {"code": exc.status, "message": exc.message, "metadata": meta}}
    else:
        body = {"error": openai_error(exc, "openai-chat")}
    return json_reply(exc.status, body, exc.retry_headers())


def usage(family: str, lookup: Lookup, completion: int, reasoning: int) -> dict[str, Any]:
    prompt, cached = lookup.prompt_tokens, lookup.cached_tokens
    out: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if family == "deepseek":
        out["prompt_cache_hit_tokens"] = cached
        out["prompt_cache_miss_tokens"] = prompt - cached
    elif family == "vllm":
        if cached:
            out["prompt_tokens_details"] = {"cached_tokens": cached}
    else:
        out["prompt_tokens_details"] = {"cached_tokens": cached}
        if family == "openrouter":
            out["prompt_tokens_details"]["cache_write_tokens"] = 0
            out["cost"] = 0
            out["is_byok"] = False
    out["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return out


class _Reply:
    """One reply being written in the family's shape: its chunks, and the calls whole (for a reply
    that is not streamed)."""

    def __init__(self, state: State, body: dict[str, Any], item: ScriptItem) -> None:
        self.state = state
        self.item = item
        self.family = state.family or "compatible"
        self.base = {
            "id": state.next_id("chatcmpl-"),
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": body["model"],
        }
        self.include_usage = self.family == "openrouter" or bool(
            (body.get("stream_options") or {}).get("include_usage")
        )
        self.chunks: list[bytes] = [b": OPENROUTER PROCESSING\n\n"] if self.family == "openrouter" else []
        self.listed = "list_content" in item.quirks  # Mistral: content as text and thinking chunks
        self.field = _REASONING_FIELD.get(self.family, "reasoning_content")
        self.details: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []

    def chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        value: dict[str, Any] = {
            **self.base,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if self.include_usage:
            value["usage"] = None
        return sse({**value, **extra})

    def add(self, delta: dict[str, Any]) -> None:
        self.chunks.append(self.chunk(delta))

    def reasoning(self, text: str) -> None:
        for frag in split_text(text):
            if self.listed:
                self.add({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": frag}]}]})
            else:
                self.add({self.field: frag})

    def reasoning_details(self, given: tuple[Any, ...]) -> None:
        """OpenRouter's reasoning_details, fragment by fragment (kept merged for a whole reply)."""
        frags = detail_fragments(self.state, given, empty_signature="empty_signature" in self.item.quirks)
        self.details = merged_details(frags)
        self.chunks.extend(self.chunk({"reasoning_details": [frag]}) for frag in frags)
        if not given:
            self.add({"reasoning_details": []})

    def text(self, text: str) -> None:
        for frag in split_text(text):
            self.add({"content": [{"type": "text", "text": frag}] if self.listed else frag})

    def tool_call(self, j: int, call: ScriptCall) -> str:
        """Call ``j``: its head, then its arguments in fragments; returns the arguments."""
        call_id = call.id or self.state.next_id("call_")
        args = call.arguments_json
        whole_call: dict[str, Any] = {
            "id": call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": args},
        }
        if "no_call_ids" in self.item.quirks:  # Gemini's and Ollama's compatible servers
            del whole_call["id"]
        head = {"index": j, **whole_call, "function": {"name": call.name, "arguments": ""}}
        self.calls.append(whole_call)
        self.add({"tool_calls": [head]})
        for frag in split_text(args, 2):
            self.add({"tool_calls": [{"index": j, "function": {"arguments": frag}}]})
        return args

    def message(self) -> dict[str, Any]:
        """The assistant message of a reply that is not streamed."""
        item = self.item
        message: dict[str, Any] = {"role": "assistant", "content": item.text or None}
        if self.listed:
            parts: list[dict[str, Any]] = []
            if item.thinking:
                parts.append({"type": "thinking", "thinking": [{"type": "text", "text": item.thinking}]})
            if item.text:
                parts.append({"type": "text", "text": item.text})
            message["content"] = parts
        elif item.thinking:
            message[self.field] = item.thinking
        if self.family == "openrouter" and item.reasoning_details is not None:
            message["reasoning_details"] = self.details
        if self.calls:
            message["tool_calls"] = self.calls
        return message

    def whole(self, finish: str, usage: dict[str, Any], timings: dict[str, Any]) -> Reply:
        """One chat.completion object."""
        whole = {
            **self.base,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": self.message(), "finish_reason": finish}],
            "usage": usage,
            **timings,
        }
        return json_reply(200, whole)


def _timings(lookup: Lookup, completion: int) -> dict[str, Any]:
    """llama.cpp's ``timings``, on the chunk with the finish reason (or the whole reply)."""
    uncached = lookup.prompt_tokens - lookup.cached_tokens
    return {
        "cache_n": lookup.cached_tokens,
        "prompt_n": uncached,
        "prompt_ms": float(uncached),
        "predicted_n": completion,
        "predicted_ms": float(completion * 5),
    }


def stream(state: State, body: dict[str, Any], item: ScriptItem, lookup: Lookup) -> Reply:
    """Role, reasoning, (OpenRouter's details,) text, then the calls, the finish and the usage."""
    reply = _Reply(state, body, item)
    reply.add({"role": "assistant", "content": [] if reply.listed else ""})
    reply.reasoning(item.thinking)
    if reply.family == "openrouter" and item.reasoning_details is not None:
        reply.reasoning_details(item.reasoning_details)
    reply.text(item.text)
    if item.stall is not None and item.stall.when == "drip":  # text deltas forever, never the end
        return event_stream(itertools.chain(reply.chunks, itertools.repeat(reply.chunk({"content": "."}))))
    if item.flood is not None:
        end = [reply.chunk({}, "stop"), sse(b"[DONE]")]
        return event_stream(itertools.chain(reply.chunks, flood(item.flood, reply.chunk), end))
    arg_texts = [reply.tool_call(j, call) for j, call in enumerate(item.calls)]
    if item.error is not None:
        reply.chunks.append(sse(stream_error(reply.family, reply.base, item.error)))
        return event_stream(reply.chunks)
    if item.cut:
        return event_stream(reply.chunks)
    finish = item.finish or ("tool_calls" if item.calls else "stop")
    completion = out_tokens(item.text, item.thinking, *arg_texts)
    timings = {"timings": _timings(lookup, completion)} if reply.family == "llamacpp" else {}
    reply.chunks.append(reply.chunk({}, finish, **timings))
    counted = usage(reply.family, lookup, completion, out_tokens(item.thinking))
    if body.get("stream") is not True or "whole_reply" in item.quirks:
        return reply.whole(finish, counted, timings)
    if reply.include_usage:
        reply.chunks.append(sse({**reply.base, "choices": [], "usage": counted}))
    reply.chunks.append(sse(b"[DONE]"))
    return event_stream(reply.chunks)


FLOOD_PIECE = 64 * 1024


def flood(spec: Flood, chunk: Callable[[dict[str, Any]], bytes]) -> Iterator[bytes]:
    """A text ``spec.bytes`` long, made piece by piece as it is sent: many 64 KB deltas, or one
    ``data:`` line whose JSON string is written in pieces (a line no client can read in one go)."""
    if not spec.line:
        whole, rest = divmod(spec.bytes, FLOOD_PIECE)
        yield from itertools.repeat(chunk({"content": "x" * FLOOD_PIECE}), whole)
        if rest:
            yield chunk({"content": "x" * rest})
        return
    head, tail = chunk({"content": "\x00"}).split(b"\\u0000", 1)
    yield head
    block = b"x" * FLOOD_PIECE
    for left in range(spec.bytes, 0, -FLOOD_PIECE):
        yield block[:left]
    yield tail


def stream_error(family: str, base: dict[str, Any], e: ScriptError) -> dict[str, Any]:
    """An error inside a stream whose status was already 200, in the family's shape."""
    kind = e.type or error_kind(e.status, "openai-chat")
    if family == "openrouter":
        choice = {"index": 0, "delta": {"content": ""}, "finish_reason": "error"}
        err = {"code": e.status, "message": e.message, "metadata": {"error_type": e.code or kind}}
        return {**base, "error": err, "choices": [choice]}
    # Every family wraps it in "error" mid-stream (the HTTP error body of cerebras is unwrapped):
    # without the key, the official SDK reads the event as a chunk and ends in silence.
    return {"error": openai_error(e, "openai-chat")}
