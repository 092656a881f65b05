"""A session as OpenTelemetry spans following the GenAI semantic conventions (ADR 0190).

One trace per session: a root ``invoke_agent nodwyn`` span from the first event to the last, an
``invoke_agent`` span per sub-agent or narrowing context, one ``chat {model}`` span (kind CLIENT)
per model request, from its ``llm.req`` to its ``llm.resp``, and one ``execute_tool {name}`` span
(kind INTERNAL) per tool call, from the reply that asked for it to its ``tool.result``. Ids are
derived from the session id and the event's seq, so exporting a session twice gives the same
spans (a backend deduplicates them) and nothing random enters.

This module is pure: ``spans(events, session)`` builds the spans; ``otlp_json`` and
``otlp_protobuf`` encode an ``ExportTraceServiceRequest`` in OTLP's JSON mapping and in protobuf
wire format (written here: no SDK, no generated classes; the official ``opentelemetry-proto``
decodes it in the tests). Sending is ``send.post_otlp``.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, assert_never
from urllib.parse import urlsplit

from nodwyn.values.content import Origin
from nodwyn.values.events import (
    MAIN_CTX,
    Bookkeeping,
    CtxClose,
    CtxOpen,
    Event,
    GatePlan,
    LlmReq,
    LlmResp,
    Note,
    Observed,
    SessionResume,
    SessionStart,
    ToolResult,
    UserMsg,
    decoded,
)
from nodwyn.values.request import Response, Usage

SCOPE = "nodwyn.export"
# The GenAI conventions this mapping follows (attribute names as of semantic conventions 1.37+).
SCHEMA_URL = "https://opentelemetry.io/schemas/1.37.0"

KIND_INTERNAL = 1
KIND_CLIENT = 3
STATUS_UNSET = 0
STATUS_ERROR = 2

AttrValue = str | int | float | bool | tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Span:
    trace_id: bytes  # 16 bytes
    span_id: bytes  # 8 bytes
    parent_id: bytes  # 8 bytes, or b"" for the root
    name: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: tuple[tuple[str, AttrValue], ...]
    status: int = STATUS_UNSET
    message: str = ""


def _id(*parts: str, size: int) -> bytes:
    return hashlib.sha256("\x00".join(parts).encode()).digest()[:size]


def unix_ns(t: str) -> int:
    """An event time (ISO 8601 UTC, as the log writes it) in nanoseconds since the epoch; 0 if
    the log holds something else (a damaged time is not a reason to drop the span)."""
    try:
        moment = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def _server(origin: Origin) -> list[tuple[str, AttrValue]]:
    """``gen_ai.provider.name`` and ``server.*`` from the request's origin. The log records the
    model entry's server name and URL, not which company runs it, and nothing is guessed from a
    URL: the provider is the server the entry names, else the URL's host."""
    host, port = None, None
    if origin.url:
        try:
            parts = urlsplit(origin.url)
            host, port = parts.hostname, parts.port
        except ValueError:
            host = None
        else:
            port = {"https": 443, "http": 80}.get(parts.scheme) if port is None else port
    out: list[tuple[str, AttrValue]] = [("gen_ai.provider.name", origin.server or host or "unknown")]
    if host:
        out.append(("server.address", host))
        if port is not None:
            out.append(("server.port", port))
    return out


def _usage(usage: Usage) -> list[tuple[str, AttrValue]]:
    """Token counts the provider reported; a count it did not report is left out, not zero.
    ``prompt_tokens`` is the whole prompt, cache reads and writes included, as the conventions
    ask of ``gen_ai.usage.input_tokens``."""
    pairs = [
        ("gen_ai.usage.input_tokens", usage.prompt_tokens),
        ("gen_ai.usage.output_tokens", usage.output_tokens),
        ("gen_ai.usage.cache_read.input_tokens", usage.cached_tokens),
        ("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens),
        ("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens),
    ]
    return [(name, value) for name, value in pairs if value is not None]


def spans(events: Iterable[Event], session: str, *, agent: str = "nodwyn") -> list[Span]:
    """The session's spans: the root first, then in the order their events were logged."""
    tracer = _Tracer(session)
    for ev in events:  # a payload that does not decode (a damaged log) gives no span
        tracer.event(ev)
    tracer.unfinished()
    return [tracer.root_span(agent), *tracer.out]


class _Tracer:
    """The spans so far, and what a later event closes: open contexts, unanswered requests, and
    the reply that asked for each call not yet answered."""

    def __init__(self, session: str) -> None:
        self.session = session
        self.trace = _id("nodwyn-trace", session, size=16)
        self.root = _id("nodwyn-span", session, "session", size=8)
        self.ctx_span: dict[str, bytes] = {MAIN_CTX: self.root}
        self.ctx_open: dict[str, tuple[Event, CtxOpen]] = {}  # ctx id -> its ctx.open
        self.requests: dict[int, tuple[Event, LlmReq]] = {}  # llm.req seq -> the request, until answered
        self.asked: dict[str, Event] = {}  # tool call id -> the reply asking for it
        self.out: list[Span] = []
        self.first_t = self.last_t = ""
        self.first_model = ""

    def parent(self, ctx: str) -> bytes:
        return self.ctx_span.get(ctx, self.root)

    def span_id(self, ev: Event) -> bytes:
        """A span's id from the event that opens it (a context, a request, a tool's result)."""
        return _id("nodwyn-span", self.session, str(ev.seq), size=8)

    def _child(
        self,
        ev: Event,
        span_id: bytes,
        name: str,
        kind: int,
        ends: tuple[str, str],
        attrs: Iterable[tuple[str, AttrValue]],
        status: int = STATUS_UNSET,
        message: str = "",
    ) -> None:
        """A span under ``ev``'s context, from the first time of ``ends`` to the second."""
        start, end = ends
        self.out.append(
            Span(
                trace_id=self.trace,
                span_id=span_id,
                parent_id=self.parent(ev.ctx),
                name=name,
                kind=kind,
                start_ns=unix_ns(start),
                end_ns=unix_ns(end),
                attributes=tuple(attrs),
                status=status,
                message=message,
            )
        )

    def event(self, ev: Event) -> None:
        self.first_t = self.first_t or ev.t
        self.last_t = ev.t
        p = decoded(ev)
        match p:
            case SessionStart() | SessionResume():
                self.first_model = self.first_model or p.model
            case CtxOpen():
                self.ctx_span[p.id] = self.span_id(ev)
                self.ctx_open[p.id] = (ev, p)
            case CtxClose():
                opened = self.ctx_open.pop(p.id, None)
                if opened is not None:
                    self.context(p.id, opened, ev)
            case LlmReq():
                self.requests[ev.seq] = (ev, p)
            case LlmResp():
                self.reply(ev, p)
            case ToolResult():
                self.tool(ev, p, self.asked.pop(p.call_id, None))
            case UserMsg() | GatePlan() | Note() | Bookkeeping() | Observed() | None:
                pass  # no span of their own (the spans are the agent, its contexts, requests, tools)
            case _:
                assert_never(p)

    def reply(self, ev: Event, p: LlmResp) -> None:
        """The chat span of the request it answers; its calls wait for their results."""
        req = self.requests.pop(p.req, None)
        if req is None:
            return
        self.chat(req, (ev, p.response))
        for call in p.response.calls:
            self.asked[call.id] = ev

    def unfinished(self) -> None:
        """Requests asked and never answered (the run stopped, or it failed), and contexts still
        open when the log ends."""
        for req in self.requests.values():
            self.chat(req, None)
        for cid, opened in self.ctx_open.items():
            self.context(cid, opened, None)

    def root_span(self, agent: str) -> Span:
        return Span(
            trace_id=self.trace,
            span_id=self.root,
            parent_id=b"",
            name=f"invoke_agent {agent}",
            kind=KIND_INTERNAL,
            start_ns=unix_ns(self.first_t),
            end_ns=unix_ns(self.last_t),
            attributes=(
                ("gen_ai.operation.name", "invoke_agent"),
                ("gen_ai.agent.name", agent),
                ("gen_ai.conversation.id", self.session),
                *((("nodwyn.model.entry", self.first_model),) if self.first_model else ()),
            ),
        )

    def tool(self, ev: Event, p: ToolResult, asked: Event | None) -> None:
        """A tool call, from the reply that asked for it (else its result) to its result."""
        attrs: list[tuple[str, AttrValue]] = [
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", p.name),
            ("gen_ai.tool.type", "function"),
            ("gen_ai.conversation.id", self.session),
            ("gen_ai.tool.call.id", p.call_id),
            ("nodwyn.seq", ev.seq),
            ("nodwyn.context", ev.ctx),
        ]
        if p.error:
            attrs.append(("error.type", "tool_error"))
        self._child(
            ev,
            self.span_id(ev),
            f"execute_tool {p.name}",
            KIND_INTERNAL,
            ((asked or ev).t, ev.t),
            attrs,
            STATUS_ERROR if p.error else STATUS_UNSET,
            (p.text.splitlines() or [""])[0][:200] if p.error else "",
        )

    def chat(self, req: tuple[Event, LlmReq], resp: tuple[Event, Response] | None) -> None:
        ev, p = req
        model = p.origin.model  # the model id as sent on the wire
        attrs: list[tuple[str, AttrValue]] = [
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.request.model", model),
            *_server(p.origin),
            ("gen_ai.conversation.id", self.session),
        ]
        if p.max_output is not None:
            attrs.append(("gen_ai.request.max_tokens", p.max_output))
        status, message = STATUS_UNSET, ""
        if resp is not None:
            r = resp[1]
            if r.model is not None:
                attrs.append(("gen_ai.response.model", r.model))
            if r.finish is not None:
                attrs.append(("gen_ai.response.finish_reasons", (r.finish,)))
            attrs += _usage(r.usage)
        else:
            status, message = STATUS_ERROR, "no reply recorded"
            attrs.append(("error.type", "no_reply"))
        attrs += [("nodwyn.seq", ev.seq), ("nodwyn.model.entry", p.model), ("nodwyn.context", ev.ctx)]
        if p.digest is not None:
            attrs.append(("nodwyn.request.digest", p.digest))
        if p.trim:
            attrs.append(("nodwyn.trim", True))
        end = resp[0] if resp is not None else ev
        self._child(ev, self.span_id(ev), f"chat {model}", KIND_CLIENT, (ev.t, end.t), attrs, status, message)

    def context(self, cid: str, opened: tuple[Event, CtxOpen], closed: Event | None) -> None:
        ev, p = opened
        name = "sub-agent" if p.kind == "sub" else "narrowed context"
        attrs: tuple[tuple[str, AttrValue], ...] = (
            ("gen_ai.operation.name", "invoke_agent"),
            ("gen_ai.agent.name", name),
            ("gen_ai.agent.id", p.id),
            ("gen_ai.conversation.id", self.session),
            ("nodwyn.seq", ev.seq),
        )
        ends = (ev.t, (closed or ev).t)
        self._child(ev, self.ctx_span[cid], f"invoke_agent {name}", KIND_INTERNAL, ends, attrs)


def _resource(session: str, version: str) -> list[tuple[str, AttrValue]]:
    return [("service.name", "nodwyn"), ("service.version", version), ("nodwyn.session", session)]


# -- OTLP JSON (the protobuf JSON mapping OTLP/HTTP accepts) ------------------------------------


def _any_json(value: AttrValue) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}  # int64 is a string in the JSON mapping
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, tuple):
        return {"arrayValue": {"values": [_any_json(v) for v in value]}}
    return {"stringValue": value}


def _attrs_json(attrs: Iterable[tuple[str, AttrValue]]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _any_json(v)} for k, v in attrs]


def otlp_json(found: Sequence[Span], session: str, version: str) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` in OTLP/JSON: ids as hex, int64 as strings, enums as numbers."""
    items = []
    for s in found:
        item: dict[str, Any] = {
            "traceId": s.trace_id.hex(),
            "spanId": s.span_id.hex(),
            "name": s.name,
            "kind": s.kind,
            "startTimeUnixNano": str(s.start_ns),
            "endTimeUnixNano": str(s.end_ns),
            "attributes": _attrs_json(s.attributes),
        }
        if s.parent_id:
            item["parentSpanId"] = s.parent_id.hex()
        if s.status != STATUS_UNSET or s.message:
            item["status"] = {"code": s.status, **({"message": s.message} if s.message else {})}
        items.append(item)
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attrs_json(_resource(session, version))},
                "scopeSpans": [
                    {"scope": {"name": SCOPE, "version": version}, "spans": items, "schemaUrl": SCHEMA_URL}
                ],
                "schemaUrl": SCHEMA_URL,
            }
        ]
    }


# -- OTLP protobuf (opentelemetry/proto/collector/trace/v1, written by hand) ----------------------


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64 as two's complement, as protobuf encodes it
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _len(field: int, payload: bytes) -> bytes:
    return _key(field, 2) + _varint(len(payload)) + payload


def _str(field: int, text: str) -> bytes:
    return _len(field, text.encode()) if text else b""


def _any_pb(value: AttrValue) -> bytes:
    if isinstance(value, bool):
        return _key(2, 0) + _varint(int(value))
    if isinstance(value, int):
        return _key(3, 0) + _varint(value)
    if isinstance(value, float):
        return _key(4, 1) + struct.pack("<d", value)
    if isinstance(value, tuple):
        return _len(5, b"".join(_len(1, _any_pb(v)) for v in value))
    return _len(1, value.encode())  # an empty string is still a string value


def _kv_pb(field: int, attrs: Iterable[tuple[str, AttrValue]]) -> bytes:
    return b"".join(_len(field, _str(1, k) + _len(2, _any_pb(v))) for k, v in attrs)


def _span_pb(s: Span) -> bytes:
    body = _len(1, s.trace_id) + _len(2, s.span_id)
    if s.parent_id:
        body += _len(4, s.parent_id)
    body += _str(5, s.name) + _key(6, 0) + _varint(s.kind)
    body += _key(7, 1) + struct.pack("<Q", s.start_ns) + _key(8, 1) + struct.pack("<Q", s.end_ns)
    body += _kv_pb(9, s.attributes)
    if s.status != STATUS_UNSET or s.message:
        status = _str(2, s.message) + (_key(3, 0) + _varint(s.status) if s.status else b"")
        body += _len(15, status)
    return body


def otlp_protobuf(found: Sequence[Span], session: str, version: str) -> bytes:
    """The same ``ExportTraceServiceRequest`` in protobuf wire format (OTLP/HTTP's default)."""
    scope = _str(1, SCOPE) + _str(2, version)
    scope_spans = _len(1, scope) + b"".join(_len(2, _span_pb(s)) for s in found) + _str(3, SCHEMA_URL)
    resource = _kv_pb(1, _resource(session, version))
    resource_spans = _len(1, resource) + _len(2, scope_spans) + _str(3, SCHEMA_URL)
    return _len(1, resource_spans)
