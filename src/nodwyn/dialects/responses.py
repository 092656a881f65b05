"""OpenAI Responses (``POST /v1/responses``): input items in, SSE output items out.

Stateless: every request carries the whole conversation and ``store: false``. Function calls go
as ``function_call`` items with ``call_id``, name and arguments, never with their ``fc_…`` item id:
the neutral request does not keep it, and an item id whose reasoning item is missing is refused,
so calls are valid whether reasoning is kept or not.

``keep_reasoning`` (false by default): ask for encrypted reasoning, keep each reasoning item as a
block (taken from ``response.output_item.done``, where its ``encrypted_content`` is complete) and
give it back, unchanged (with its ``id`` and ``encrypted_content``, which ``store: false`` needs;
only an empty ``content`` list is left out, ADR 0311), before the call it came before, with
``reasoning.context: "all_turns"``.
The reply's output is read from the terminal response, or assembled from the streamed items when
that output is empty (ChatGPT-plan backends). A stream without a terminal event is incomplete:
``complete`` says so and the transport asks again once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nodwyn.dialects.base import DialectBase
from nodwyn.dialects.errors import stream_error
from nodwyn.dialects.session_key import key_fields
from nodwyn.dialects.wire import (
    NO_IMAGES,
    Fragment,
    StreamEvent,
    WireRequest,
    arrange,
    block_json,
    cache_control,
    check_blocks,
    dumps,
    finish_reason,
    image_base64,
    int_or_none,
    join_text,
    load_object,
    opt_dict,
    opt_list,
    opt_str,
    stream_incomplete,
    sub,
    tool_images_after,
    wrong_type,
)
from nodwyn.errors import EncodeError
from nodwyn.values.content import (
    AssistantMessage,
    ImagePart,
    Message,
    Origin,
    TextPart,
    ThinkingBlock,
    ToolCall,
    UserMessage,
)
from nodwyn.values.model import ModelEntry
from nodwyn.values.request import CacheReport, Request, Response, ToolSpec, Usage

TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
# the delta events, as what they show (reasoning_text is shown only: the reply takes it from its item)
_DELTAS = {
    "response.output_text.delta": "text",
    "response.reasoning_summary_text.delta": "thinking",
    "response.reasoning_text.delta": "thinking",
}


def _user_item(
    m: UserMessage, where: str, settings: ModelEntry, images: Mapping[str, bytes]
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for j, p in enumerate(m.parts):
        if isinstance(p, TextPart):
            content.append({"type": "input_text", "text": p.text})
        elif isinstance(p, ImagePart):
            data = image_base64(images, p, settings, f"{where}.parts[{j}]")
            url = f"data:{p.media_type};base64,{data}"
            content.append({"type": "input_image", "image_url": url, "detail": "auto"})
    return {"type": "message", "role": "user", "content": content}


def _tool(t: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "name": t.name,
        "description": t.description,
        "parameters": t.parameters,
        "strict": False,
    }


def _reasoning(settings: ModelEntry) -> dict[str, Any]:
    reasoning: dict[str, Any] = {}
    if settings.reasoning_effort is not None:
        reasoning["effort"] = settings.reasoning_effort
        reasoning["summary"] = "auto"
    if settings.keep_reasoning:
        reasoning["context"] = "all_turns"
    return reasoning


class ResponsesDialect(DialectBase):
    api = "responses"
    models_path = "/v1/models"
    asks_again_when_cut = True  # once; the reply's notes say so (see the module docstring)

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
        check_blocks(request, settings, ("reasoning",), self.api)
        body: dict[str, Any] = {"model": settings.model}
        if request.system:
            body["instructions"] = request.system
        body["input"] = [
            it
            for i, m in enumerate(tool_images_after(request.messages))
            for it in self._items(m, i, settings, images)
        ]
        if request.tools:
            body["tools"] = [_tool(t) for t in request.tools]
        body["stream"] = stream
        body["store"] = False
        if request.max_output is not None:
            body["max_output_tokens"] = request.max_output
        reasoning = _reasoning(settings)
        if reasoning:
            body["reasoning"] = reasoning
        if settings.keep_reasoning:
            body["include"] = ["reasoning.encrypted_content"]
        headers, key_body = key_fields(settings, session_key, plan_usage=plan_usage)
        body.update(key_body)
        cc = cache_control(settings)
        if cc is not None:
            body["cache_control"] = cc
        if settings.cache_diagnostics and diagnose_against is not None:  # wire only (ADR 0312)
            body["prompt_cache_options"] = {"comparison_response_id": diagnose_against}
        return WireRequest(
            method="POST", path="/v1/responses", headers=self.base_headers() | headers, body=body
        )

    def _items(
        self, m: Message, i: int, settings: ModelEntry, images: Mapping[str, bytes]
    ) -> list[dict[str, Any]]:
        """The input items of message ``i``."""
        where = f"messages[{i}]"
        if isinstance(m, UserMessage):
            return [_user_item(m, where, settings, images)]
        if isinstance(m, AssistantMessage):
            return self._assistant_items(m, where)
        return [{"type": "function_call_output", "call_id": m.call_id, "output": m.text}]

    def _assistant_items(self, m: AssistantMessage, where: str) -> list[dict[str, Any]]:
        """Reasoning items, the text message and function calls, in the reply's order. Thinking text
        without its reasoning item has no place in Responses input: the API reads reasoning back
        only as the item it gave (see ADR 0049)."""
        items: list[dict[str, Any]] = []
        for kind, x in arrange(m):
            if kind == "block":
                items.append(self._item(x, where))
            elif kind == "text":
                message: dict[str, Any] = {"type": "message", "role": "assistant", "content": x}
                if m.phase is not None:  # the API asks for it back on every assistant message
                    message["phase"] = m.phase
                items.append(message)
            else:
                items.append(
                    {"type": "function_call", "call_id": x.id, "name": x.name, "arguments": x.arguments}
                )
        return items

    @staticmethod
    def _item(b: ThinkingBlock, where: str) -> dict[str, Any]:
        value = block_json(b.data, f"{where} reasoning block")
        if not isinstance(value, dict) or value.get("type") != "reasoning":
            raise EncodeError(
                f"{where}: a reasoning block's data is not a reasoning item; the log entry is damaged"
            )
        if value.get("content") == []:  # never an empty content list: the field is optional (ADR 0311)
            return {k: v for k, v in value.items() if k != "content"}
        return value

    def decoder(self, origin: Origin) -> ResponsesDecoder:
        return ResponsesDecoder(
            self.provider,
            origin,
            keep=self.settings.keep_reasoning,
            diagnostics=self.settings.cache_diagnostics,
        )

    def decode_body(self, body: bytes, origin: Origin) -> Response:
        value = self._load_body(body)
        dec = self.decoder(origin)
        dec.terminal(
            "response.completed" if value.get("status") != "incomplete" else "response.incomplete", value
        )
        return dec.finish()


@dataclass(slots=True)
class _Output:
    """A reply's output items read in order: text, thinking, calls, kept reasoning blocks, notes."""

    p: str  # the provider
    origin: Origin
    keep: bool
    done_by_id: dict[Any, dict[str, Any]]  # the items as output_item.done gave them, by id
    texts: list[str] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    blocks: list[ThinkingBlock] = field(default_factory=list)
    phase: str | None = None
    notes: list[str] = field(default_factory=list)

    def item(self, n: int, item: Any) -> None:
        if not isinstance(item, dict):
            raise wrong_type(self.p, f"output[{n}]", item, "an object")
        typ = item.get("type")
        if typ == "message":
            self.message(n, item)
        elif typ == "reasoning":
            self.reasoning(self.done_by_id.get(item.get("id"), item))
        elif typ == "function_call":
            self.function_call(n, item)
        else:  # a server-side tool's item (web_search_call, ...): said, never dropped in silence
            self.notes.append(
                f"responses: output[{n}] ({typ}) left out: the server ran it, and nodwyn does not "
                "send such items back"
            )

    def message(self, n: int, item: dict[str, Any]) -> None:
        p = self.p
        self.phase = opt_str(item.get("phase"), f"output[{n}].phase", p) or self.phase
        for k, part in enumerate(opt_list(item.get("content"), f"output[{n}].content", p)):
            at = f"output[{n}].content[{k}]"
            if not isinstance(part, dict):
                raise wrong_type(p, at, part, "an object")
            if part.get("type") == "output_text":
                self.texts.append(opt_str(part.get("text"), f"{at}.text", p) or "")
            elif part.get("type") == "refusal":
                self.texts.append(opt_str(part.get("refusal"), f"{at}.refusal", p) or "")

    def reasoning(self, item: dict[str, Any]) -> None:
        """Its summary is the thinking; kept whole as a block, placed before the next call."""
        summary = join_text(
            [str(s.get("text", "")) for s in item.get("summary") or [] if isinstance(s, dict)]
        )
        if not summary:  # servers that return the reasoning itself rather than a summary
            summary = join_text(
                [
                    str(c.get("text", ""))
                    for c in item.get("content") or []
                    if isinstance(c, dict) and c.get("type") == "reasoning_text"
                ]
            )
        self.thoughts.append(summary)
        if self.keep:
            block = ThinkingBlock(
                type="reasoning", origin=self.origin, data=dumps(item), text=summary, position=len(self.calls)
            )
            self.blocks.append(block)

    def function_call(self, n: int, item: dict[str, Any]) -> None:
        at, p = f"output[{n}]", self.p
        self.calls.append(
            ToolCall(
                id=opt_str(item.get("call_id"), f"{at}.call_id", p) or "",
                name=opt_str(item.get("name"), f"{at}.name", p) or "",
                arguments=opt_str(item.get("arguments"), f"{at}.arguments", p) or "",
            )
        )


class ResponsesDecoder:
    def __init__(self, provider: str, origin: Origin, *, keep: bool, diagnostics: bool = False) -> None:
        self.provider = provider
        self.origin = origin
        self.keep = keep
        self.diagnostics = diagnostics  # keep the response id and the provider's cache diagnosis
        self.items: dict[int, dict[str, Any]] = {}
        self.text_deltas: list[str] = []
        self.thinking_deltas: list[str] = []
        self.final: dict[str, Any] | None = None
        self.final_kind: str | None = None
        self.model: str | None = None

    @property
    def complete(self) -> bool:
        return self.final is not None

    def feed(self, ev: StreamEvent) -> list[Fragment]:
        if ev.data.strip() == "[DONE]":
            # OpenRouter's /responses ends its stream so after response.completed. The terminal
            # event alone makes the reply complete: a [DONE] before it leaves it incomplete.
            return []
        what = f"a {ev.event or 'stream'} event"
        data = load_object(ev.data, what, what, self.provider)
        kind = data.get("type") if isinstance(data.get("type"), str) else ev.event
        if kind == "error":
            raise stream_error(self.provider, data)
        resp = data.get("response")
        if isinstance(resp, dict) and isinstance(resp.get("model"), str):
            self.model = resp["model"]
        if kind in _DELTAS:
            delta = opt_str(data.get("delta"), f"{kind}.delta", self.provider) or ""
            if kind == "response.output_text.delta":
                self.text_deltas.append(delta)
            elif kind == "response.reasoning_summary_text.delta":
                self.thinking_deltas.append(delta)
            return [(_DELTAS[kind], delta)] if delta else []
        if kind == "response.output_item.done":
            item, idx = data.get("item"), data.get("output_index")
            if isinstance(item, dict):
                self.items[idx if isinstance(idx, int) else len(self.items)] = item
        elif kind in TERMINAL and isinstance(resp, dict):
            self.terminal(kind, resp)
        return []

    def terminal(self, kind: str, resp: dict[str, Any]) -> None:
        if kind == "response.failed":
            err = resp.get("error") if isinstance(resp.get("error"), dict) else {"message": "response failed"}
            raise stream_error(self.provider, {"error": err})
        if isinstance(resp.get("model"), str):
            self.model = resp["model"]
        self.final = resp
        self.final_kind = kind

    def finish(self) -> Response:
        """The reply from the terminal response's output, or from the streamed items when that is
        empty (or from the streamed deltas when there are no items at all)."""
        final = self.final
        if final is None:
            raise stream_incomplete(self.provider, "its terminal response.completed event")
        out = final.get("output")
        streamed = [self.items[k] for k in sorted(self.items)]
        output: list[Any] = out if isinstance(out, list) and out else streamed
        done_by_id = {it.get("id"): it for it in streamed if it.get("id") is not None}
        read = _Output(self.provider, self.origin, self.keep, done_by_id)
        for n, item in enumerate(output):
            read.item(n, item)
        if not output:
            read.texts, read.thoughts = ["".join(self.text_deltas)], ["".join(self.thinking_deltas)]
        return Response(
            text="".join(read.texts),
            thinking=join_text(read.thoughts),
            calls=tuple(read.calls),
            blocks=tuple(read.blocks),
            usage=self._usage(final),
            finish=self._finish(final, read.calls),
            model=self.model,
            notes=tuple(read.notes),
            phase=read.phase,
            id=opt_str(final.get("id"), "response.id", self.provider) if self.diagnostics else None,
            cache_report=self._report(final) if self.diagnostics else None,
        )

    def _report(self, final: dict[str, Any]) -> CacheReport | None:
        """``prompt_cache_diagnostics``: ``cache_hit`` is no divergence; ``cache_miss`` its reason
        and ``cache_missed_tokens``; ``comparison_response_not_found`` and ``unavailable`` as said."""
        where = "response.prompt_cache_diagnostics"
        d = opt_dict(final.get("prompt_cache_diagnostics"), where, self.provider)
        if not d:
            return None
        kind = opt_str(d.get("type"), f"{where}.type", self.provider) or "unknown"
        if kind == "cache_hit":
            return CacheReport()
        if kind == "cache_miss":
            reason = opt_str(d.get("reason"), f"{where}.reason", self.provider) or "unknown"
            return CacheReport(reason=reason, missed_tokens=int_or_none(d.get("cache_missed_tokens")))
        return CacheReport(reason=kind)

    def _finish(self, final: dict[str, Any], calls: list[ToolCall]) -> str | None:
        if self.final_kind != "response.incomplete":
            return "tool_calls" if calls else "stop"
        details = final.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        return finish_reason(reason if isinstance(reason, str) else "incomplete")

    def _usage(self, final: dict[str, Any]) -> Usage:
        u = final.get("usage")
        if not isinstance(u, dict):
            return Usage()
        itd = sub(u, "input_tokens_details")
        otd = sub(u, "output_tokens_details")
        return Usage(
            prompt_tokens=int_or_none(u.get("input_tokens")),
            cached_tokens=int_or_none(itd.get("cached_tokens")),
            cache_write_tokens=int_or_none(itd.get("cache_write_tokens")),
            output_tokens=int_or_none(u.get("output_tokens")),
            reasoning_tokens=int_or_none(otd.get("reasoning_tokens")),
        )
