"""OpenAI chat completions (``POST /v1/chat/completions``) and the servers that speak it.

What differs between server families (the field thinking goes back as, the output limit's field,
session headers, usage fields) is each family's ``profiles.ChatProfile``.

A reply's ``reasoning_details`` (every family but cerebras) are kept as one block, the array's
compact JSON, and go back as that message's ``reasoning_details`` with no reasoning text beside
them. ``reasoning_details_only`` (an OpenRouter route to Claude) sends no text without details.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from nodwyn.dialects.base import DialectBase
from nodwyn.dialects.errors import stream_error
from nodwyn.dialects.profiles import CACHE_READS, ChatProfile, profile_for
from nodwyn.dialects.session_key import key_fields
from nodwyn.dialects.wire import (
    NO_IMAGES,
    Fragment,
    StreamEvent,
    WireRequest,
    block_json,
    cache_control,
    check_blocks,
    dumps,
    finish_reason,
    function_tools,
    image_base64,
    int_or_none,
    loads,
    not_object,
    opt_dict,
    opt_list,
    opt_str,
    stream_incomplete,
    sub,
    tool_images_after,
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
    UserMessage,
)
from nodwyn.values.model import ModelEntry
from nodwyn.values.request import Request, Response, Timings, Usage


def _details(blocks: tuple[ThinkingBlock, ...], where: str) -> list[Any] | None:
    """The reasoning_details the message's blocks hold, parsed from the text they came as."""
    out: list[Any] | None = None
    for j, b in enumerate(blocks):
        if b.type != "reasoning_details":
            continue
        value = block_json(b.data, f"{where}.blocks[{j}]")
        if not isinstance(value, list):
            raise EncodeError(
                f"{where}.blocks[{j}]: reasoning_details data is not a JSON array; the log entry is damaged"
            )
        out = value if out is None else out + value
    return out


def _assistant(m: AssistantMessage, where: str, settings: ModelEntry, profile: ChatProfile) -> dict[str, Any]:
    """A reply: its text (None beside calls), its reasoning (OpenRouter's details when it has them,
    else the thinking in the profile's field) and its calls."""
    msg: dict[str, Any] = {
        "role": "assistant",
        "content": m.text if m.text or not m.calls else None,
    }
    details = _details(m.blocks, where)
    if details is not None:
        msg["reasoning_details"] = details
    elif (m.thinking and not settings.reasoning_details_only) or (
        profile.reasoning_on_calls and m.calls  # even empty, where the server needs it
    ):
        msg[profile.reasoning_out] = m.thinking
    if m.calls:
        msg["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in m.calls
        ]
    return msg


class ChatDialect(DialectBase):
    api = "openai-chat"
    models_path = "/v1/models"

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
        profile = profile_for(settings)
        check_blocks(request, settings, ("reasoning_details",), self.api)
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        for i, m in enumerate(tool_images_after(request.messages)):
            where = f"messages[{i}]"
            if isinstance(m, UserMessage):
                messages.append({"role": "user", "content": self._user_content(m, settings, images, where)})
            elif isinstance(m, AssistantMessage):
                messages.append(_assistant(m, where, settings, profile))
            else:
                messages.append({"role": "tool", "tool_call_id": m.call_id, "content": m.text})
        body: dict[str, Any] = {"model": settings.model, "messages": messages}
        if request.tools:
            body["tools"] = function_tools(request.tools)
        body["stream"] = stream
        if stream and profile.stream_usage_option:
            body["stream_options"] = {"include_usage": True}
        if request.max_output is not None:
            body[profile.max_output_field] = request.max_output
        if settings.reasoning_effort is not None:
            body["reasoning_effort"] = settings.reasoning_effort
        headers, key_body = key_fields(settings, session_key, plan_usage=plan_usage)
        body.update(key_body)
        cc = cache_control(settings)
        if cc is not None:
            body["cache_control"] = cc
        return WireRequest(
            method="POST", path="/v1/chat/completions", headers=self.base_headers() | headers, body=body
        )

    @staticmethod
    def _user_content(
        m: UserMessage, settings: ModelEntry, images: Mapping[str, bytes], where: str
    ) -> str | list[dict[str, Any]]:
        if len(m.parts) == 1 and isinstance(m.parts[0], TextPart):
            return m.parts[0].text
        parts: list[dict[str, Any]] = []
        for j, p in enumerate(m.parts):
            if isinstance(p, TextPart):
                parts.append({"type": "text", "text": p.text})
            elif isinstance(p, ImagePart):
                data = image_base64(images, p, settings, f"{where}.parts[{j}]")
                parts.append(
                    {"type": "image_url", "image_url": {"url": f"data:{p.media_type};base64,{data}"}}
                )
        return parts

    def decoder(self, origin: Origin) -> ChatDecoder:
        return ChatDecoder(
            self.provider,
            origin,
            keep_details=profile_for(self.settings).keeps_details,
            checks_signatures=self.settings.reasoning_details_only,
        )

    def decode_body(self, body: bytes, origin: Origin) -> Response:
        dec = self.decoder(origin)
        dec.take(self._load_body(body), "message")
        dec.done = True
        return dec.finish()


def content_pieces(value: Any, where: str, provider: str) -> list[Fragment]:
    """A message's ``content``: a string, or a list of chunks (Mistral: ``text`` chunks and
    ``thinking`` chunks whose ``thinking`` is a list of text chunks or a string). What cannot be
    represented is a DecodeError naming the field, never dropped."""
    if value is None:
        return []
    if isinstance(value, str):
        return [("text", value)]
    if not isinstance(value, list):
        raise wrong_type(provider, where, value, "a string or an array of chunks")
    out: list[Fragment] = []
    for i, chunk in enumerate(value):
        at = f"{where}[{i}]"
        if not isinstance(chunk, dict):
            raise wrong_type(provider, at, chunk, "an object")
        kind = chunk.get("type")
        if kind == "text":
            out.append(("text", opt_str(chunk.get("text"), f"{at}.text", provider) or ""))
        elif kind == "thinking":
            inner = chunk.get("thinking")
            if isinstance(inner, list):
                for piece_kind, piece in content_pieces(inner, f"{at}.thinking", provider):
                    if piece_kind != "text":
                        raise DecodeError(
                            f"{provider}: {at}.thinking holds a {piece_kind} chunk; only text chunks "
                            "can be read as thinking",
                            provider=provider,
                        )
                    out.append(("thinking", piece))
            else:
                out.append(("thinking", opt_str(inner, f"{at}.thinking", provider) or ""))
        else:
            raise DecodeError(
                f"{provider}: {at}.type is {kind!r}; this dialect reads text and thinking chunks only "
                "and would lose the rest (a server speaking a newer shape)",
                provider=provider,
            )
    return out


def merge_details(acc: list[dict[str, Any]], fragments: list[Any]) -> None:
    """Merge streamed reasoning_details fragments as OpenRouter's own client does.

    A fragment with the ``index`` of an entry already seen continues it; a ``reasoning.text``
    fragment without an index continues a trailing ``reasoning.text``. Continuing concatenates
    ``text`` and ``summary``; any other field takes its first non-empty value (the first fragment
    of a Claude route carries ``"signature": ""`` and the real one comes later; a ``[REDACTED]``
    placeholder gives way to the real data). Anything else starts a new entry, in arrival order.
    """
    for f in fragments:
        if not isinstance(f, dict):
            raise DecodeError(f"a reasoning_details fragment is not an object: {f!r:.80}")
        idx = f.get("index")
        target: dict[str, Any] | None = None
        if idx is not None:
            target = next((e for e in acc if e.get("index") == idx), None)
        elif acc and f.get("type") == "reasoning.text" and acc[-1].get("type") == "reasoning.text":
            target = acc[-1]
        if target is None or (f.get("type") is not None and f.get("type") != target.get("type")):
            acc.append(dict(f))
            continue
        for k, v in f.items():
            old = target.get(k)
            if k in ("text", "summary") and isinstance(v, str) and isinstance(old, str):
                target[k] = old + v
            elif old is None or (old in ("", "[REDACTED]") and v not in (None, "")):
                target[k] = v


def _signed_only(data: str) -> tuple[str | None, list[str]]:
    """For a route that checks signatures (``reasoning_details_only``): the array without the
    ``reasoning.text`` entries still unsigned at the end of the reply (the route would refuse them
    as "Invalid signature in thinking block"), and a note for each left out. Unchanged (the same
    text) when every entry is signed; None when nothing is left to send back."""
    entries = orjson.loads(data)
    if not isinstance(entries, list):
        return data, []
    kept: list[Any] = []
    notes: list[str] = []
    for i, e in enumerate(entries):
        if isinstance(e, dict) and e.get("type") == "reasoning.text" and not e.get("signature"):
            notes.append(
                f"reasoning_details[{i}] (reasoning.text) came without a signature; it is not sent back, "
                "since this route checks signatures (reasoning_details_only)"
            )
            continue
        kept.append(e)
    if not notes:
        return data, []
    return (dumps(kept) if kept else None), notes


@dataclass(slots=True)
class ChatDecoder:
    provider: str
    origin: Origin
    keep_details: bool
    checks_signatures: bool = False  # the route refuses unsigned reasoning.text
    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    details: list[dict[str, Any]] | None = None
    details_raw: str | None = None  # a non-streamed array, kept as it came
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    arg_pieces: dict[int, list[str]] = field(default_factory=dict)  # each call's streamed arguments
    finish_raw: str | None = None
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None
    time_info: dict[str, Any] | None = None
    model: str | None = None
    done: bool = False

    @property
    def complete(self) -> bool:
        return self.done or self.finish_raw is not None

    def feed(self, ev: StreamEvent) -> list[Fragment]:
        if ev.data.strip() == "[DONE]":
            self.done = True
            return []
        return self.take(loads(ev.data, "a stream chunk", self.provider), "delta")

    def take(self, obj: Any, key: str) -> list[Fragment]:
        if not isinstance(obj, dict):
            raise not_object(self.provider, "a stream chunk")
        if obj.get("error"):
            raise stream_error(self.provider, obj)
        if obj.get("object") == "error" or ("choices" not in obj and "message" in obj and "type" in obj):
            raise stream_error(self.provider, obj)
        if isinstance(obj.get("model"), str):
            self.model = obj["model"]
        if isinstance(obj.get("usage"), dict):
            self.usage = obj["usage"]
        if isinstance(obj.get("timings"), dict):
            self.timings = obj["timings"]
        if isinstance(obj.get("time_info"), dict):
            self.time_info = obj["time_info"]
        shown: list[Fragment] = []
        p = self.provider
        for n, ch in enumerate(opt_list(obj.get("choices"), "choices", p)):
            if not isinstance(ch, dict):
                raise wrong_type(p, f"choices[{n}]", ch, "an object")
            if ch.get("index", 0) != 0:
                continue
            d = ch.get(key)
            if d is not None:
                shown += self._delta(opt_dict(d, f"choices[{n}].{key}", p), streamed=key == "delta")
            finish = opt_str(ch.get("finish_reason"), f"choices[{n}].finish_reason", p)
            if finish is not None:
                self.finish_raw = finish
        return shown

    def _delta(self, d: dict[str, Any], *, streamed: bool) -> list[Fragment]:
        where = "choices[0].delta" if streamed else "choices[0].message"
        p = self.provider
        shown: list[Fragment] = []
        r = opt_str(d.get("reasoning"), f"{where}.reasoning", p)
        if r is None:
            r = opt_str(d.get("reasoning_content"), f"{where}.reasoning_content", p)
        reasoning: list[Fragment] = [] if r is None else [("thinking", r)]
        for kind, piece in reasoning + content_pieces(d.get("content"), f"{where}.content", p):
            (self.text if kind == "text" else self.thinking).append(piece)
            if piece:
                shown.append((kind, piece))
        rd = d.get("reasoning_details")
        if rd is not None and self.keep_details:
            rd = opt_list(rd, f"{where}.reasoning_details", p)
            if self.details is None:
                self.details = []
            if streamed:
                merge_details(self.details, rd)
            else:
                self.details_raw = dumps(rd)
        for n, tc in enumerate(opt_list(d.get("tool_calls"), f"{where}.tool_calls", p)):
            at = f"{where}.tool_calls[{n}]"
            if not isinstance(tc, dict):
                raise wrong_type(p, at, tc, "an object")
            idx = tc.get("index", len(self.calls))
            if isinstance(idx, bool) or not isinstance(idx, int):
                raise wrong_type(p, f"{at}.index", idx, "an integer")
            slot = self.calls.setdefault(idx, {"id": "", "name": ""})
            call_id = opt_str(tc.get("id"), f"{at}.id", p)
            if call_id:
                slot["id"] = call_id
            fn = opt_dict(tc.get("function"), f"{at}.function", p)
            name = opt_str(fn.get("name"), f"{at}.function.name", p)
            if name is not None:
                slot["name"] = slot["name"] + name if streamed else name
            args = fn.get("arguments")
            if isinstance(args, dict) and not streamed:  # a server that gives the object itself
                args = dumps(args)
            args = opt_str(args, f"{at}.function.arguments", p)
            if args is not None:  # pieces joined once at finish: appending each was quadratic
                if streamed:
                    self.arg_pieces.setdefault(idx, []).append(args)
                else:
                    self.arg_pieces[idx] = [args]
        return shown

    def finish(self) -> Response:
        if not self.complete:
            raise stream_incomplete(self.provider, "its finish_reason or [DONE]")
        calls = []
        for k in sorted(self.calls):
            c = self.calls[k]
            if not c["name"]:
                raise DecodeError(f"{self.provider}: tool call {k} has no name", provider=self.provider)
            # A call without an id (Gemini's and Ollama's OpenAI-compatible servers) keeps "": the
            # agent mints one unique in the session from the request's seq (values.content.mint_call_ids).
            arguments = "".join(self.arg_pieces.get(k, ()))
            calls.append(ToolCall(id=c["id"], name=c["name"], arguments=arguments))
        blocks: tuple[ThinkingBlock, ...] = ()
        notes: list[str] = []
        if self.details is not None:
            data: str | None = self.details_raw if self.details_raw is not None else dumps(self.details)
            if self.checks_signatures and data is not None:
                data, notes = _signed_only(data)
            if data is not None:
                blocks = (ThinkingBlock(type="reasoning_details", origin=self.origin, data=data),)
        return Response(
            text="".join(self.text),
            thinking="".join(self.thinking),
            calls=tuple(calls),
            blocks=blocks,
            usage=self._usage(),
            finish=finish_reason(self.finish_raw),
            model=self.model,
            timings=self._timings(),
            notes=tuple(notes),
        )

    def _usage(self) -> Usage:
        u = self.usage
        if u is None:
            return Usage()
        ptd = sub(u, "prompt_tokens_details")
        ctd = sub(u, "completion_tokens_details")
        # every family's field, whatever the entry's family
        cached = next((n for n in map(self._field, CACHE_READS) if n is not None), None)
        return Usage(
            prompt_tokens=int_or_none(u.get("prompt_tokens")),
            cached_tokens=cached,
            cache_write_tokens=int_or_none(ptd.get("cache_write_tokens")),
            output_tokens=int_or_none(u.get("completion_tokens")),
            reasoning_tokens=int_or_none(ctd.get("reasoning_tokens")),
        )

    def _field(self, path: str) -> int | None:
        """``usage.a.b`` or ``timings.b`` of this reply, when it is an integer."""
        top, *keys = path.split(".")
        value: Any = self.usage if top == "usage" else self.timings if top == "timings" else None
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        return int_or_none(value)

    def _timings(self) -> Timings:
        if self.timings is not None:
            pm = self.timings.get("prompt_ms")
            gm = self.timings.get("predicted_ms")
            prefill = float(pm) if isinstance(pm, int | float) else None
            total = prefill + float(gm) if prefill is not None and isinstance(gm, int | float) else None
            return Timings(prefill_ms=prefill, total_ms=total)
        if self.time_info is not None:  # Cerebras, in seconds
            pt = self.time_info.get("prompt_time")
            tt = self.time_info.get("total_time")
            return Timings(
                prefill_ms=pt * 1000 if isinstance(pt, int | float) else None,
                total_ms=tt * 1000 if isinstance(tt, int | float) else None,
            )
        return Timings()
