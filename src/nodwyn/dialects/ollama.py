"""Ollama's native ``POST /api/chat``: NDJSON stream, object tool arguments, thinking field.

Requests always send ``options.num_ctx`` (the model entry's context size, so a session never
reloads the model and loses its KV cache) and ``truncate: false`` (Ollama would otherwise cut the
front of an over-long prompt silently, and the window is the one that decides what is sent).
Usage: ``prompt_eval_count`` is the whole prompt; Ollama reports no cached-token count, so
``cached_tokens`` is unknown (None), and the prefill time shows the cache instead.
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
    check_blocks,
    dumps,
    finish_reason,
    function_tools,
    image_base64,
    int_or_none,
    json_object,
    loads,
    not_object,
    opt_dict,
    opt_list,
    opt_str,
    stream_incomplete,
    tool_images_after,
    wrong_type,
)
from nodwyn.errors import DecodeError, EncodeError
from nodwyn.values.content import (
    AssistantMessage,
    ImagePart,
    Message,
    Origin,
    TextPart,
    ToolCall,
    UserMessage,
)
from nodwyn.values.model import ModelEntry
from nodwyn.values.request import Request, Response, Timings, Usage

# ``think`` is a bool or a level ("low" ... "max"); these effort words mean the bool.
_THINK: dict[str, bool] = {"none": False, "off": False, "false": False, "on": True, "true": True}


def _message(m: Message, where: str, settings: ModelEntry, images: Mapping[str, bytes]) -> dict[str, Any]:
    if isinstance(m, UserMessage):
        return _user(m, where, settings, images)
    if isinstance(m, AssistantMessage):
        return _assistant(m, where)
    return {"role": "tool", "content": m.text, "tool_name": m.name, "tool_call_id": m.call_id}


def _user(m: UserMessage, where: str, settings: ModelEntry, images: Mapping[str, bytes]) -> dict[str, Any]:
    """The text parts joined; images beside them as base64."""
    texts = [p.text for p in m.parts if isinstance(p, TextPart)]
    msg: dict[str, Any] = {"role": "user", "content": "\n".join(texts)}
    pics = [
        image_base64(images, p, settings, f"{where}.parts[{j}]")
        for j, p in enumerate(m.parts)
        if isinstance(p, ImagePart)
    ]
    if pics:
        msg["images"] = pics
    return msg


def _assistant(m: AssistantMessage, where: str) -> dict[str, Any]:
    """Text, thinking, and calls whose arguments go as objects."""
    msg: dict[str, Any] = {"role": "assistant", "content": m.text}
    if m.thinking:
        msg["thinking"] = m.thinking
    if m.calls:
        msg["tool_calls"] = [
            {
                "id": c.id,
                "function": {
                    "name": c.name,
                    "arguments": json_object(c.arguments, f"{where}.calls[{k}]", "Ollama"),
                },
            }
            for k, c in enumerate(m.calls)
        ]
    return msg


class OllamaDialect(DialectBase):
    api = "ollama"
    models_path = "/api/tags"

    def encode(
        self,
        request: Request,
        *,
        session_key: str | None,
        plan_usage: bool = False,
        stream: bool = True,
        images: Mapping[str, bytes] = NO_IMAGES,
        diagnose_against: str | None = None,  # no cache diagnosis on this API (ADR 0312)
    ) -> WireRequest:
        settings = self.settings
        # Ollama has no session knob (one server, one cache): the key is not sent.
        check_blocks(request, settings, (), self.api)
        if settings.cache_control is not None:
            raise EncodeError(
                f"model {settings.name!r}: Ollama's /api/chat has no cache_control "
                "(it caches the prefix by itself); remove cache_control from the model entry"
            )
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages += [
            _message(m, f"messages[{i}]", settings, images)
            for i, m in enumerate(tool_images_after(request.messages))
        ]
        body: dict[str, Any] = {"model": settings.model, "messages": messages}
        if request.tools:
            body["tools"] = function_tools(request.tools)
        body["stream"] = stream
        if settings.reasoning_effort is not None:
            body["think"] = _THINK.get(settings.reasoning_effort, settings.reasoning_effort)
        options: dict[str, Any] = {"num_ctx": settings.context_size}
        if request.max_output is not None:
            options["num_predict"] = request.max_output
        body["options"] = options
        if settings.keep_alive is not None:
            body["keep_alive"] = settings.keep_alive
        body["truncate"] = False
        return WireRequest(method="POST", path="/api/chat", headers=self.base_headers(), body=body)

    def decoder(self, origin: Origin) -> OllamaDecoder:
        return OllamaDecoder(self.provider)

    def decode_body(self, body: bytes, origin: Origin) -> Response:
        dec = self.decoder(origin)
        dec.take(self._load_body(body))
        return dec.finish()


class OllamaDecoder:
    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.calls: list[ToolCall] = []
        self.final: dict[str, Any] | None = None
        self.model: str | None = None

    @property
    def complete(self) -> bool:
        return self.final is not None

    def feed(self, ev: StreamEvent) -> list[Fragment]:
        return self.take(loads(ev.data, "an NDJSON line", self.provider))

    def take(self, obj: Any) -> list[Fragment]:
        if not isinstance(obj, dict):
            raise not_object(self.provider, "a stream line")
        if "error" in obj:
            raise stream_error(self.provider, obj)
        if isinstance(obj.get("model"), str):
            self.model = obj["model"]
        shown: list[Fragment] = []
        p = self.provider
        msg = opt_dict(obj.get("message"), "message", p)
        for key, kind, pieces in (("thinking", "thinking", self.thinking), ("content", "text", self.text)):
            piece = opt_str(msg.get(key), f"message.{key}", p) or ""
            pieces.append(piece)
            shown += [(kind, piece)] if piece else []
        for n, tc in enumerate(opt_list(msg.get("tool_calls"), "message.tool_calls", p)):
            self.calls.append(self._call(tc, f"message.tool_calls[{n}]"))
        if obj.get("done") is True:
            self.final = obj
        return shown

    def _call(self, tc: Any, where: str) -> ToolCall:
        p = self.provider
        fn = tc.get("function") if isinstance(tc, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise DecodeError(f"{p}: {where} has no function name: {tc!r:.80}", provider=p)
        args = fn.get("arguments", {})
        if not isinstance(args, str | dict):
            raise wrong_type(p, f"{where}.function.arguments", args, "an object")
        # A call without an id keeps "": the agent mints one unique in the session from the
        # request's seq (values.content.mint_call_ids); "call_<k>" repeated across turns.
        return ToolCall(
            id=opt_str(tc.get("id"), f"{where}.id", p) or "",
            name=fn["name"],
            arguments=args if isinstance(args, str) else dumps(args),
        )

    def finish(self) -> Response:
        if self.final is None:
            raise stream_incomplete(self.provider, 'its "done": true line')
        f = self.final
        finish = finish_reason(f.get("done_reason") if isinstance(f.get("done_reason"), str) else None)
        if self.calls and finish == "stop":
            finish = "tool_calls"
        ped = f.get("prompt_eval_duration")
        total = f.get("total_duration")
        return Response(
            text="".join(self.text),
            thinking="".join(self.thinking),
            calls=tuple(self.calls),
            usage=Usage(
                prompt_tokens=int_or_none(f.get("prompt_eval_count")),
                cached_tokens=None,
                output_tokens=int_or_none(f.get("eval_count")),
            ),
            finish=finish,
            model=self.model,
            timings=Timings(
                prefill_ms=ped / 1e6 if isinstance(ped, int | float) else None,
                total_ms=total / 1e6 if isinstance(total, int | float) else None,
            ),
        )
