"""A fake Anthropic Messages server (``POST /v1/messages``, SSE).

It caches only when asked (``cache_control`` at the top level or on blocks, at most four in
all) and reports usage as Anthropic does: ``input_tokens`` is the tail after the last breakpoint,
with ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` beside it. Thinking blocks
come out signed, redacted thinking with opaque data; a block sent back must be one this server
gave, unchanged, else 400 — unless the request opts in to ``drop_block`` with the beta header,
when the block is dropped and named in ``input_transformations``. It also refuses a missing
``anthropic-version`` or ``max_tokens``, unpaired ``tool_use``/``tool_result`` blocks, and (in the
API's words) a message with no content or an empty text block. Asked by ``diagnostics.previous_message_id``,
the message carries ``diagnostics`` from the fake's own cache state (``fakes.diagnosis``, ADR 0312).
"""

from __future__ import annotations

from collections.abc import Mapping
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
from nodwyn.fakes.diagnosis import Seen, compare, remember
from nodwyn.fakes.script import ScriptCall, ScriptError, ScriptItem

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
        lookup = state.lookup(prompt)
        return stream(state, body, item, lookup, ttl, dropped, _diagnosis(state, body, lookup))
    except ApiError as exc:
        headers = {"request-id": "req_fake", **exc.retry_headers()}
        kind = exc.type or error_kind(exc.status, "anthropic")
        body = {"type": "error", "error": {"type": kind, "message": exc.message}, "request_id": "req_fake"}
        return json_reply(exc.status, body, headers)


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _cache_marks(body: dict[str, Any]) -> int:
    """Blocks (and the top level) that ask for a cache breakpoint: the API allows four."""
    marked = [t for t in body.get("tools", []) if isinstance(t, dict)]
    marked += [b for b in _blocks(body.get("system", [])) if isinstance(b, dict)]
    marked += [b for m in body["messages"] for b in _blocks(m.get("content")) if isinstance(b, dict)]
    return sum(1 for b in marked if "cache_control" in b) + (1 if "cache_control" in body else 0)


def _drops_mismatched(req: ReceivedRequest, body: dict[str, Any]) -> bool:
    """Whether the request opts in (with the beta header) to dropping a thinking block it did not get."""
    thinking: dict[str, Any] = body["thinking"] if isinstance(body.get("thinking"), dict) else {}
    binding = thinking.get("block_binding")
    betas = {b.strip() for b in req.headers.get("anthropic-beta", "").split(",")}
    if binding is not None and BINDING_BETA not in betas:
        raise ApiError(400, "thinking.block_binding: Extra inputs are not permitted")
    return isinstance(binding, dict) and binding.get("prefix_mismatch_behavior") == "drop_block"


def _unanswered(where: str, ids: set[str], hint: str = "") -> str:
    return (
        f"{where}: `tool_use` ids were found without `tool_result` blocks immediately after: "
        f"{', '.join(sorted(ids))}.{hint}"
    )


class _Turns:
    """The messages' blocks checked in order: each tool_use answered in the next message, each
    thinking block one this server signed (or dropped, when the request opts in)."""

    def __init__(self, state: State, drop: bool) -> None:
        self.state = state
        self.drop = drop
        self.signatures: dict[str, str] = state.extra.setdefault("signatures", {})
        self.dropped: list[dict[str, str]] = []
        self.previous_uses: set[str] = set()

    def message(self, i: int, m: Any) -> list[Any] | None:
        """The message's blocks kept, or None when all are."""
        if not isinstance(m, dict) or m.get("role") not in {"user", "assistant", "system"}:
            raise ApiError(400, f"messages.{i}.role: Input should be 'user', 'assistant' or 'system'")
        blocks = _blocks(m.get("content"))
        uses: set[str] = set()
        results: set[str] = set()
        kept = []
        for j, b in enumerate(blocks):
            if self.block(f"messages.{i}.content.{j}", m, b, uses, results):
                kept.append(b)
        missing = self.previous_uses - results
        if missing:
            hint = " Each `tool_use` block must have a corresponding `tool_result` block in the next message."
            raise ApiError(400, _unanswered(f"messages.{i}", missing, hint))
        self.previous_uses = uses
        return kept if len(kept) != len(blocks) else None

    def block(self, path: str, m: dict[str, Any], b: Any, uses: set[str], results: set[str]) -> bool:
        """Checks one block; False when it is dropped."""
        kind = b.get("type") if isinstance(b, dict) else None
        if kind == "tool_use":
            if not isinstance(b.get("input"), dict):
                raise ApiError(400, f"{path}.tool_use.input: Input should be a valid dictionary")
            uses.add(str(b.get("id")))
        elif kind == "tool_result":
            if b.get("tool_use_id") not in self.previous_uses:
                raise ApiError(
                    400,
                    f"{path}: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{b.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                    "`tool_use` block in the previous message.",
                )
            results.add(b["tool_use_id"])
        elif kind in {"thinking", "redacted_thinking"}:
            return self.thinking(path, m, b, kind)
        return True

    def thinking(self, path: str, m: dict[str, Any], b: dict[str, Any], kind: str) -> bool:
        if m["role"] != "assistant":
            raise ApiError(400, f"{path}: thinking blocks may only appear in assistant messages")
        if kind == "thinking":
            good = self.signatures.get(str(b.get("signature"))) == b.get("thinking")
        else:
            good = self.state.knows(b.get("data"))
        if good:
            return True
        if not self.drop:
            raise ApiError(
                400,
                f"{path}: Invalid `signature` in `thinking` block. "
                "The block is bound to a different conversation. Remove the block, or set "
                '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block".',
            )
        self.dropped.append({"type": "thinking_dropped", "path": path, "reason": "prefix_mismatch"})
        return False


def _non_empty(i: int, m: Any, *, last: bool) -> None:
    """Anthropic refuses a message with no content (the final assistant one, a prefill, may be
    empty) and an empty text block, with these words."""
    blocks = _blocks(m.get("content")) if isinstance(m, dict) else []
    if not blocks and not (last and isinstance(m, dict) and m.get("role") == "assistant"):
        raise ApiError(
            400,
            f"messages.{i}: all messages must have non-empty content except for the optional final "
            "assistant message",
        )
    for j, b in enumerate(blocks):
        if isinstance(b, dict) and b.get("type") == "text" and not b.get("text"):
            raise ApiError(400, f"messages.{i}.content.{j}: text content blocks must be non-empty")


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
    marks = _cache_marks(body)
    if marks > 4:
        raise ApiError(400, f"A maximum of 4 blocks with cache_control may be provided. Found {marks}.")
    turns = _Turns(state, _drops_mismatched(req, body))
    for i, m in enumerate(messages):
        _non_empty(i, m, last=i == len(messages) - 1)
        kept = turns.message(i, m)
        if kept is not None:
            messages[i] = {**m, "content": kept}
    if turns.previous_uses:
        raise ApiError(400, _unanswered(f"messages.{len(messages) - 1}", turns.previous_uses))
    return body, turns.dropped


def _sections(body: dict[str, Any]) -> tuple[tuple[str, bytes], ...]:
    """The request as a diagnosis compares it: model, tools, system, then the messages' blocks
    (what ``prompt_of`` caches, without the ``cache_control`` marks, which are not part of the key)."""

    def bare(value: Any) -> Any:
        return {k: v for k, v in value.items() if k != "cache_control"} if isinstance(value, dict) else value

    messages = [
        unit({"role": m["role"], **bare(b)}) for m in body["messages"] for b in _blocks(m.get("content"))
    ]
    return (
        ("model_changed", unit(body["model"])),
        ("tools_changed", b"".join(unit(bare(t)) for t in body.get("tools", []))),
        ("system_changed", b"".join(unit(bare(b)) for b in _blocks(body.get("system", [])))),
        ("messages_changed", b"".join(messages)),
    )


def _diagnosis(state: State, body: dict[str, Any], lookup: Lookup) -> tuple[Seen, dict[str, Any] | None]:
    """What a later comparison needs of this request, and the reply's ``diagnostics`` when the
    request asked (``diagnostics.previous_message_id``): null when nothing diverged."""
    seen = Seen(sections=_sections(body), reusable=lookup.cached_tokens + lookup.cache_write_tokens)
    asked = body.get("diagnostics")
    earlier = asked.get("previous_message_id") if isinstance(asked, dict) else None
    if not isinstance(earlier, str):
        return seen, None
    verdict = compare(state, earlier, seen, lookup.cached_tokens)
    if verdict.reason is None:
        return seen, None
    if verdict.reason == "not found":
        return seen, {"cache_miss_reason": {"type": "previous_message_not_found"}}
    if verdict.reason == "unavailable":
        return seen, {"cache_miss_reason": {"type": "unavailable"}}
    reason = {"type": verdict.reason, "cache_missed_input_tokens": verdict.missed}
    return seen, {"cache_miss_reason": reason}


def prompt_of(body: dict[str, Any]) -> tuple[Prompt, str]:
    units: list[bytes] = []
    marks: list[int] = []
    ttl = "5m"

    def add(value: dict[str, Any], extra: dict[str, Any] | None = None) -> None:
        nonlocal ttl
        if "cache_control" in value:
            ttl = str((value["cache_control"] or {}).get("ttl", ttl))
            value = {k: v for k, v in value.items() if k != "cache_control"}
            marks.append(len(units) + 1)  # after this unit
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


class _Reply:
    """One reply being written: its events, the content blocks whole (for a reply not streamed),
    the next block index, and the thinking texts (they count as output)."""

    def __init__(self, state: State, item: ScriptItem) -> None:
        self.state = state
        self.item = item
        self.signatures: dict[str, str] = state.extra.setdefault("signatures", {})
        self.chunks: list[bytes] = []
        self.index = 0
        self.texts: list[str] = []
        self.content: list[dict[str, Any]] = []
        self.blocks: list[Mapping[str, Any]] = [
            b for b in item.blocks if b.get("type") in {"thinking", "redacted_thinking"}
        ]
        if item.thinking and not self.blocks:
            self.blocks = [{"type": "thinking", "thinking": item.thinking, "position": 0}]

    def emit(self, kind: str, **fields: Any) -> None:
        self.chunks.append(sse({"type": kind, **fields}, event=kind))

    def block(self, head: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        """One content block: its start, its deltas, its stop."""
        self.emit("content_block_start", index=self.index, content_block=head)
        for delta in deltas:
            self.emit("content_block_delta", index=self.index, delta=delta)
        self.emit("content_block_stop", index=self.index)
        self.index += 1

    def thinking_at(self, position: int) -> None:
        for b in self.blocks:
            if int(b.get("position", 0)) == position:
                if b.get("type") == "redacted_thinking":
                    self.redacted()
                else:
                    self.thinking(str(b.get("thinking", "")))

    def redacted(self) -> None:
        redacted = {"type": "redacted_thinking", "data": self.state.mint("redacted")}
        self.content.append(redacted)
        self.block(redacted, [])

    def thinking(self, text: str) -> None:
        """A thinking block, signed after its text (the signature binds the block to this server)."""
        self.texts.append(text)
        deltas = [{"type": "thinking_delta", "thinking": frag} for frag in split_text(text)]
        signature = self.state.mint("signature", text)
        self.signatures[signature] = text
        self.content.append({"type": "thinking", "thinking": text, "signature": signature})
        deltas.append({"type": "signature_delta", "signature": signature})
        self.block({"type": "thinking", "thinking": "", "signature": ""}, deltas)

    def text(self, text: str) -> None:
        self.content.append({"type": "text", "text": text})
        deltas = [{"type": "text_delta", "text": frag} for frag in split_text(text)]
        self.block({"type": "text", "text": ""}, deltas)

    def tool_use(self, call: ScriptCall) -> str:
        """A tool_use block; returns its arguments' JSON."""
        args = call.arguments_json
        head = {
            "type": "tool_use",
            "id": call.id or self.state.next_id("toolu_"),
            "name": call.name,
            "input": {},
        }
        self.content.append({**head, "input": call.arguments})
        deltas = [{"type": "input_json_delta", "partial_json": frag} for frag in split_text(args, 2)]
        self.block(head, deltas)
        return args

    def error(self, e: ScriptError) -> Reply:
        self.emit("error", error={"type": e.type or error_kind(e.status, "anthropic"), "message": e.message})
        return event_stream(self.chunks)


def _usage(lookup: Lookup, ttl: str) -> dict[str, Any]:
    """Input usage as message_start reports it (output_tokens 1 until the end)."""
    write = lookup.cache_write_tokens
    return {
        "input_tokens": lookup.uncached_tokens,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": lookup.cached_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": 0 if ttl == "1h" else write,
            "ephemeral_1h_input_tokens": write if ttl == "1h" else 0,
        },
        "output_tokens": 1,
    }


def _message(state: State, body: dict[str, Any], usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": state.next_id("msg_"),
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": body["model"],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }


def stream(
    state: State,
    body: dict[str, Any],
    item: ScriptItem,
    lookup: Lookup,
    ttl: str,
    dropped: list[dict[str, str]],
    diagnosis: tuple[Seen, dict[str, Any] | None],
) -> Reply:
    """Thinking at position 0, the text, then each call (with the thinking placed before it)."""
    reply = _Reply(state, item)
    usage = _usage(lookup, ttl)
    message = _message(state, body, usage)
    seen, said = diagnosis
    remember(state, message["id"], seen)
    if "diagnostics" in body:
        message["diagnostics"] = said
    late = "delta_transformations" in item.quirks  # named on message_delta instead
    if dropped and not late:
        message["input_transformations"] = dropped
    reply.emit("message_start", message=message)
    reply.emit("ping")
    reply.thinking_at(0)
    if item.text:
        reply.text(item.text)
    args_texts = []
    for j, call in enumerate(item.calls):
        if j:
            reply.thinking_at(j)
        args_texts.append(reply.tool_use(call))
    if item.error is not None:
        return reply.error(item.error)
    if item.cut:
        return event_stream(reply.chunks)
    output = out_tokens(item.text, *reply.texts, *args_texts)
    stop = "tool_use" if item.calls else "end_turn"
    if body.get("stream") is not True or "whole_reply" in item.quirks:  # the whole message as one object
        whole = {
            **message,
            "content": reply.content,
            "stop_reason": stop,
            "usage": {**usage, "output_tokens": output},
        }
        return json_reply(200, whole, {"request-id": "req_fake"})
    final_usage = {k: v for k, v in usage.items() if k != "cache_creation"} | {"output_tokens": output}
    extra: dict[str, Any] = {"input_transformations": dropped} if dropped and late else {}
    reply.emit(
        "message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage=final_usage, **extra
    )
    reply.emit("message_stop")
    return event_stream(reply.chunks, {"request-id": "req_fake"})
