"""Anthropic Messages (``POST /v1/messages``): content blocks, signed thinking, opt-in caching.

A reply's ``thinking`` (signature as data) and ``redacted_thinking`` (data) blocks are kept with
their position among its tool calls and go back byte for byte, where they were. A reply with nothing to give
back (no text, calls or blocks) is left off the wire (ADR 0310). A request that
carries blocks asks ``thinking: {type: adaptive, block_binding: {prefix_mismatch_behavior:
drop_block}}`` with the ``thinking-binding-controls-2026-08-01`` beta, so a block whose prefix
changed is dropped by the API instead of failing the request. ``cache_control`` from the model
entry goes top-level (it is the one breakpoint nodwyn uses of the four allowed). Usage: the
prompt is ``input_tokens`` + cache read + cache write, since ``input_tokens`` counts only what
came after the last breakpoint.

There is no session knob on Anthropic's API, so the session key is not sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodwyn.dialects.base import DialectBase
from nodwyn.dialects.errors import stream_error
from nodwyn.dialects.wire import (
    NO_IMAGES,
    Fragment,
    StreamEvent,
    WireRequest,
    arrange,
    cache_control,
    check_blocks,
    dumps,
    finish_reason,
    image_base64,
    int_or_none,
    join_text,
    json_object,
    load_object,
    opt_dict,
    opt_list,
    opt_str,
    stream_incomplete,
    sub,
    wrong_type,
)
from nodwyn.errors import DecodeError, EncodeError
from nodwyn.values.content import (
    AssistantMessage,
    ImagePart,
    Origin,
    TextPart,
    ThinkingBlock,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from nodwyn.values.model import ModelEntry
from nodwyn.values.request import CacheReport, Request, Response, Usage

VERSION = "2023-06-01"
BINDING_BETA = "thinking-binding-controls-2026-08-01"
DIAGNOSIS_BETA = "cache-diagnosis-2026-04-07"
# a content_block_delta's type -> (its field, the block's key its pieces join into)
_DELTAS = {
    "text_delta": ("text", "text"),
    "thinking_delta": ("thinking", "thinking"),
    "signature_delta": ("signature", "signature"),
    "input_json_delta": ("partial_json", "partial"),
}


def _image(p: ImagePart, images: Mapping[str, bytes], settings: ModelEntry, where: str) -> dict[str, Any]:
    data = image_base64(images, p, settings, where)
    return {"type": "image", "source": {"type": "base64", "media_type": p.media_type, "data": data}}


def _tool_result(
    m: ToolMessage, settings: ModelEntry, images: Mapping[str, bytes], where: str
) -> dict[str, Any]:
    # is_error goes as it is, false included, as Anthropic's own clients send it; a result's
    # images go in its content, after its text (a tool_result takes text and image blocks)
    content: str | list[dict[str, Any]] = m.text
    if m.images:
        content = [{"type": "text", "text": m.text}] if m.text else []
        content += [_image(p, images, settings, f"{where}.images[{j}]") for j, p in enumerate(m.images)]
    return {"type": "tool_result", "tool_use_id": m.call_id, "content": content, "is_error": m.error}


class AnthropicDialect(DialectBase):
    api = "anthropic"
    models_path = "/v1/models"

    def base_headers(self) -> dict[str, str]:
        return {"content-type": "application/json", "anthropic-version": VERSION}

    def encode(
        self,
        request: Request,
        *,
        session_key: str | None,
        plan_usage: bool = False,
        stream: bool = True,
        images: Mapping[str, bytes] = NO_IMAGES,
        diagnose_against: str | None = None,
    ) -> WireRequest:
        settings = self.settings
        check_blocks(request, settings, ("thinking", "redacted_thinking"), self.api)
        if request.max_output is None:
            raise EncodeError(
                f"model {settings.name!r}: Anthropic requires max_tokens and the request has no max_output "
                "(a recipe before window-v8); start a new session to send it to Anthropic"
            )
        body: dict[str, Any] = {"model": settings.model, "max_tokens": request.max_output}
        if request.system:
            body["system"] = request.system
        body["messages"] = self._messages(request, settings, images)
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
        body["stream"] = stream
        headers = self.base_headers()
        if settings.reasoning_effort is not None:
            body["thinking"] = {"type": "adaptive"}
            body["output_config"] = {"effort": settings.reasoning_effort}
        if any(isinstance(m, AssistantMessage) and m.blocks for m in request.messages):
            body["thinking"] = {
                "type": "adaptive",
                "block_binding": {"prefix_mismatch_behavior": "drop_block"},
            }
            headers["anthropic-beta"] = BINDING_BETA
        cc = cache_control(settings)
        if cc is not None:
            body["cache_control"] = cc
        if settings.cache_diagnostics and diagnose_against is not None:  # wire only (ADR 0312)
            body["diagnostics"] = {"previous_message_id": diagnose_against}
            betas = [b for b in (headers.get("anthropic-beta"), DIAGNOSIS_BETA) if b]
            headers["anthropic-beta"] = ",".join(betas)
        return WireRequest(method="POST", path="/v1/messages", headers=headers, body=body)

    def _messages(
        self, request: Request, settings: ModelEntry, images: Mapping[str, bytes]
    ) -> list[dict[str, Any]]:
        """The messages in Anthropic's shape: consecutive tool results go in one user message."""
        messages: list[dict[str, Any]] = []
        results: list[dict[str, Any]] | None = None  # the user message collecting consecutive results
        for i, m in enumerate(request.messages):
            where = f"messages[{i}]"
            if isinstance(m, ToolMessage):
                if results is None:
                    results = []
                    messages.append({"role": "user", "content": results})
                results.append(_tool_result(m, settings, images, where))
                continue
            results = None
            if isinstance(m, UserMessage):
                messages.append({"role": "user", "content": self._user(m, settings, images, where)})
            elif isinstance(m, AssistantMessage):
                content = self._assistant(m, where)
                if content:  # a reply with nothing to give back says nothing (ADR 0310)
                    messages.append({"role": "assistant", "content": content})
        return messages

    @staticmethod
    def _user(
        m: UserMessage, settings: ModelEntry, images: Mapping[str, bytes], where: str
    ) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = []
        for j, p in enumerate(m.parts):
            if isinstance(p, TextPart) and p.text:
                content.append({"type": "text", "text": p.text})
            elif isinstance(p, ImagePart):
                content.append(_image(p, images, settings, f"{where}.parts[{j}]"))
        if not content:
            raise EncodeError(
                f"{where}: an empty user message cannot be sent to Anthropic (it refuses empty text)"
            )
        return content

    @staticmethod
    def _assistant(m: AssistantMessage, where: str) -> list[dict[str, Any]]:
        """The reply's blocks; empty for a reply with no text, calls or blocks that go back (an
        empty reply, or a thinking-only one whose blocks went stale), which is then left off the
        wire: Anthropic refuses an empty message and combines the user turns around it (ADR 0310).
        Thinking text without its signed block is not sent: Anthropic reads thinking back only as
        the block it gave (see ADR 0050)."""
        content: list[dict[str, Any]] = []
        for kind, x in arrange(m):
            if kind == "block":
                if x.type == "thinking":
                    content.append({"type": "thinking", "thinking": x.text, "signature": x.data})
                else:
                    content.append({"type": "redacted_thinking", "data": x.data})
            elif kind == "text":
                content.append({"type": "text", "text": x})
            else:
                k = m.calls.index(x)
                content.append(
                    {
                        "type": "tool_use",
                        "id": x.id,
                        "name": x.name,
                        "input": json_object(x.arguments, f"{where}.calls[{k}]", "Anthropic"),
                    }
                )
        return content

    def decoder(self, origin: Origin) -> AnthropicDecoder:
        return AnthropicDecoder(self.provider, origin, diagnostics=self.settings.cache_diagnostics)

    def decode_body(self, body: bytes, origin: Origin) -> Response:
        value = self._load_body(body)
        if value.get("type") == "error":
            raise stream_error(self.provider, value)
        dec = self.decoder(origin)
        dec.start(value)
        for i, b in enumerate(value.get("content") or []):
            if isinstance(b, dict):
                dec.blocks[i] = dict(b, partial="")
        dec.delta(value)
        dec.stopped = True
        return dec.finish()


def cache_report(value: Any, where: str, provider: str) -> CacheReport | None:
    """Anthropic's ``diagnostics``: null is no divergence found (or none asked, which the sender
    tells apart), ``cache_miss_reason: null`` a diagnosis still pending, else the reason's type and
    its ``cache_missed_input_tokens``."""
    d = opt_dict(value, where, provider)
    if not d:
        return None
    reason = opt_dict(d.get("cache_miss_reason"), f"{where}.cache_miss_reason", provider)
    if not reason:
        return CacheReport(reason="pending")
    kind = opt_str(reason.get("type"), f"{where}.cache_miss_reason.type", provider) or "unknown"
    return CacheReport(reason=kind, missed_tokens=int_or_none(reason.get("cache_missed_input_tokens")))


def _kept(b: dict[str, Any], origin: Origin, position: int) -> ThinkingBlock:
    """A thinking block (its signature as its data) or a redacted one, kept to be given back
    before the call at ``position``."""
    thinking = b.get("type") == "thinking"
    return ThinkingBlock(
        type="thinking" if thinking else "redacted_thinking",
        origin=origin,
        data=str(b.get("signature" if thinking else "data", "")),
        text=str(b.get("thinking", "")) if thinking else "",
        position=position,
    )


class AnthropicDecoder:
    def __init__(self, provider: str, origin: Origin, *, diagnostics: bool = False) -> None:
        self.provider = provider
        self.origin = origin
        self.diagnostics = diagnostics  # keep the message id and the provider's cache diagnosis
        self.id: str | None = None
        self.report: CacheReport | None = None
        self.blocks: dict[int, dict[str, Any]] = {}
        # streamed pieces per (block, field), joined once at finish: appending to a str each time
        # made a long text or tool input quadratic
        self.pieces: dict[tuple[int, str], list[str]] = {}
        self.usage: dict[str, Any] = {}
        self.stop_reason: str | None = None
        self.model: str | None = None
        self.notes: list[str] = []
        self.stopped = False

    @property
    def complete(self) -> bool:
        return self.stopped

    def start(self, msg: dict[str, Any]) -> None:
        if isinstance(msg.get("model"), str):
            self.model = msg["model"]
        if isinstance(msg.get("usage"), dict):
            self.usage.update(msg["usage"])
        self.transformations(msg, "message_start.message")
        if self.diagnostics:
            self.id = opt_str(msg.get("id"), "message_start.message.id", self.provider)
            self.report = cache_report(msg.get("diagnostics"), "message.diagnostics", self.provider)

    def transformations(self, obj: dict[str, Any], where: str) -> None:
        """``input_transformations`` (a block the API dropped, …), on ``message_start`` or
        ``message_delta``: each becomes a note on the reply, with its reason when given."""
        for i, t in enumerate(
            opt_list(obj.get("input_transformations"), f"{where}.input_transformations", self.provider)
        ):
            if not isinstance(t, dict):
                raise wrong_type(self.provider, f"{where}.input_transformations[{i}]", t, "an object")
            note = f"anthropic {t.get('type', 'transformation')} at {t.get('path', '?')}"
            if isinstance(t.get("reason"), str) and t["reason"]:
                note += f": {t['reason']}"
            if note not in self.notes:
                self.notes.append(note)

    def delta(self, obj: dict[str, Any]) -> None:
        d = sub(obj, "delta") or obj
        if isinstance(d.get("stop_reason"), str):
            self.stop_reason = d["stop_reason"]
        if isinstance(obj.get("usage"), dict):
            self.usage.update({k: v for k, v in obj["usage"].items() if v is not None})
        self.transformations(obj, "message_delta")
        if d is not obj:
            self.transformations(d, "message_delta.delta")

    def feed(self, ev: StreamEvent) -> list[Fragment]:
        what = f"a {ev.event or 'stream'} event"
        data = load_object(ev.data, what, what, self.provider)
        kind = data.get("type", ev.event)
        if kind == "error":
            raise stream_error(self.provider, data)
        if kind == "message_start" and isinstance(data.get("message"), dict):
            self.start(data["message"])
        elif kind == "content_block_start":
            cb = data.get("content_block")
            if isinstance(cb, dict):
                index = int(data.get("index", len(self.blocks)))
                self.blocks[index] = dict(cb, partial="")
                for key in [k for k in self.pieces if k[0] == index]:
                    del self.pieces[key]
        elif kind == "content_block_delta":
            return self._block_delta(data)
        elif kind == "message_delta":
            self.delta(data)
        elif kind == "message_stop":
            self.stopped = True
        return []

    def _block_delta(self, data: dict[str, Any]) -> list[Fragment]:
        index = int(data.get("index", -1))
        b = self.blocks.get(index)
        d = data.get("delta")
        if b is None or not isinstance(d, dict):
            raise DecodeError(
                f"{self.provider}: a content_block_delta for a block never started", provider=self.provider
            )
        t = d.get("type")
        if not isinstance(t, str) or t not in _DELTAS:
            return []
        field, key = _DELTAS[t]
        piece = opt_str(d.get(field), f"content_block_delta.delta.{field}", self.provider) or ""
        self.pieces.setdefault((index, key), []).append(piece)
        return [(key, piece)] if piece and key in ("text", "thinking") else []

    def _join_pieces(self) -> None:
        """Each block's streamed pieces after what its start gave, joined once."""
        for (index, key), parts in self.pieces.items():
            b = self.blocks[index]
            b[key] = str(b.get(key, "")) + "".join(parts)
        self.pieces = {}

    def finish(self) -> Response:
        if not self.stopped:
            raise stream_incomplete(self.provider, "its message_stop event")
        self._join_pieces()
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[ToolCall] = []
        blocks: list[ThinkingBlock] = []
        notes = list(self.notes)
        for k in sorted(self.blocks):
            b = self.blocks[k]
            t = b.get("type")
            if t == "text":
                texts.append(str(b.get("text", "")))
            elif t in ("thinking", "redacted_thinking"):
                blocks.append(_kept(b, self.origin, len(calls)))
                thoughts.append(blocks[-1].text)  # a redacted block's is empty: join_text skips it
            elif t == "tool_use":
                args = b["partial"] if b["partial"] else dumps(b.get("input", {}))
                calls.append(ToolCall(id=str(b.get("id", "")), name=str(b.get("name", "")), arguments=args))
            else:  # a server tool's block (server_tool_use, web_search_tool_result, ...): said, not hidden
                notes.append(
                    f"anthropic: content[{k}] ({t}) left out: the server ran it, and nodwyn does not "
                    "send such blocks back"
                )
        return Response(
            text="".join(texts),
            thinking=join_text(thoughts),
            calls=tuple(calls),
            blocks=tuple(blocks),
            usage=self._usage(),
            finish=finish_reason(self.stop_reason),
            model=self.model,
            notes=tuple(notes),
            id=self.id,
            cache_report=self.report,
        )

    def _usage(self) -> Usage:
        u = self.usage
        inp = int_or_none(u.get("input_tokens"))
        read = int_or_none(u.get("cache_read_input_tokens"))
        write = int_or_none(u.get("cache_creation_input_tokens"))
        otd = sub(u, "output_tokens_details")
        return Usage(
            prompt_tokens=None if inp is None else inp + (read or 0) + (write or 0),
            cached_tokens=read,
            cache_write_tokens=write,
            output_tokens=int_or_none(u.get("output_tokens")),
            reasoning_tokens=int_or_none(otd.get("thinking_tokens")),
        )
