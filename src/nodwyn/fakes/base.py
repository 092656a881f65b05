"""What every fake API shares: the received-request record, the reply, the server state, and the
opaque tokens (signatures, encrypted reasoning) a fake mints and later checks came from itself."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from nodwyn.fakes.cache import CacheModel, Lookup, Prompt
from nodwyn.fakes.script import Script, ScriptError, ScriptItem, Stall

FIXED_TIME = "2026-01-01T00:00:00Z"
CREATED = 1767225600  # FIXED_TIME in Unix seconds, as OpenAI's ``created`` fields give it
PREFILL_NS_PER_TOKEN = 1_000_000  # 1 ms a token: what an uncached token costs a local server here
EVAL_NS_PER_TOKEN = 5_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class ReceivedRequest:
    """A request as it arrived: for assertions on what went over the wire."""

    method: str
    path: str
    headers: Mapping[str, str]  # lower-cased names
    body: Any  # parsed JSON, or None
    raw: bytes


@dataclass(slots=True, kw_only=True)
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    chunks: Iterable[bytes] = field(default_factory=list)  # written and flushed one by one (may be lazy)


class ApiError(Exception):
    """An error the fake answers in its API's shape (raised while validating a request)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        type: str | None = None,
        code: Any = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.type = type
        self.code = code
        self.retry_after = retry_after

    def retry_headers(self) -> dict[str, str]:
        """``retry-after`` when the script gave one, else nothing."""
        return {} if self.retry_after is None else {"retry-after": f"{self.retry_after:g}"}


@dataclass(slots=True, kw_only=True)
class State:
    """One fake server's mutable state; ``lock`` serialises request handling."""

    api: str
    family: str | None
    cache: CacheModel
    script: Script
    api_key: str | None
    models: tuple[str, ...]
    name: str  # distinguishes this server's minted tokens from another's
    model_fields: Mapping[str, Mapping[str, Any]]  # per model id: what its model-list entry adds
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: list[ReceivedRequest] = field(default_factory=list)
    minted: set[str] = field(default_factory=set)
    lookups: list[Lookup] = field(default_factory=list)
    counter: int = 0
    extra: dict[str, Any] = field(default_factory=dict)  # per-API memory (which reasoning a call followed)
    stall: Stall | None = None  # the stall of the item the request being handled took
    closing: threading.Event = field(default_factory=threading.Event)  # the server closes: stalls end

    def next_id(self, prefix: str) -> str:
        self.counter += 1
        tag = hashlib.sha256(f"{self.name}:{self.counter}".encode()).hexdigest()[:12]
        return f"{prefix}{tag}"

    def mint(self, *parts: str) -> str:
        """An opaque token only this server recognises (stands in for a signature or ciphertext)."""
        self.counter += 1
        token = hashlib.sha256("\x00".join((self.name, str(self.counter), *parts)).encode()).hexdigest()
        self.minted.add(token)
        return token

    def knows(self, token: object) -> bool:
        return isinstance(token, str) and token in self.minted

    def lookup(self, prompt: Prompt) -> Lookup:
        found = self.cache.lookup(prompt)
        self.lookups.append(found)
        return found

    def next_item(self) -> ScriptItem:
        item = self.script.next()
        if item is None:
            raise ApiError(
                410,
                f"fake script exhausted: all {self.script.total} scripted replies are used; "
                "add replies to the script",
                type="invalid_request_error",
            )
        self.stall = item.stall
        e = item.error
        if e is not None and not e.mid_stream:
            raise ApiError(
                e.status, e.message, param=e.param, type=e.type, code=e.code, retry_after=e.retry_after
            )
        return item


_ANTHROPIC_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_kind(status: int, api: str) -> str:
    """The error ``type`` the API gives a status when the script names none (HTTP or mid-stream)."""
    if api == "anthropic" and status in _ANTHROPIC_TYPES:
        return _ANTHROPIC_TYPES[status]
    if status == 429:
        return "rate_limit_error"
    if status >= 500:
        return "api_error" if api == "anthropic" else "server_error"
    return "invalid_request_error"


def openai_error(e: ApiError | ScriptError, api: str) -> dict[str, Any]:
    """The error object of OpenAI's APIs (under ``"error"``, but by cerebras over HTTP)."""
    return {
        "message": e.message,
        "type": e.type or error_kind(e.status, api),
        "param": e.param,
        "code": e.code,
    }


def sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    payload = data if isinstance(data, bytes) else orjson.dumps(data)
    return head + b"data: " + payload + b"\n\n"


def event_stream(chunks: Iterable[bytes], headers: Mapping[str, str] | None = None) -> Reply:
    """A 200 SSE reply of the given events (the stream ends where ``chunks`` end)."""
    return Reply(headers={"content-type": "text/event-stream", **(headers or {})}, chunks=chunks)


def json_reply(status: int, value: Any, headers: Mapping[str, str] | None = None) -> Reply:
    return Reply(
        status=status,
        headers={"content-type": "application/json", **(headers or {})},
        chunks=[orjson.dumps(value)],
    )


def out_tokens(*texts: str) -> int:
    return sum(-(-len(t.encode()) // 3) for t in texts if t)


def split_text(text: str, parts: int = 3) -> list[str]:
    """Cut a text into a few stream fragments (so clients must join them)."""
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


Handler = Callable[[State, ReceivedRequest], Reply]
