"""Provider error replies -> one ``ProviderError`` with a one-line message.

Every documented error shape is read by one parser, whatever the dialect, so an error
from a server behind the wrong family setting still says what it said:

* OpenAI (and DeepSeek, OpenRouter-less vLLM): ``{"error": {"message", "type", "param", "code"}}``
* Cerebras, SGLang: the same fields unwrapped (``{"message", "type", "param", "code"}``)
* OpenRouter: ``{"error": {"code": <int>, "message", "metadata": {"raw", "provider_name", "error_type"}}}``
* Anthropic: ``{"type": "error", "error": {"type", "message"}, "request_id"}``
* Ollama: ``{"error": "<text>"}``
* anything else (an HTML page from a proxy): its first line.

The field the server rejected is its ``param`` when that names one, else the path or name the
message starts with or quotes. 429, 5xx and overloaded replies become retryable subclasses
carrying the ``Retry-After`` the server gave.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from email.utils import mktime_tz, parsedate_tz
from typing import Any

import orjson

from nodwyn.dialects.profiles import PROFILES, SEND_REASONING
from nodwyn.errors import (
    AuthError,
    ContextLengthError,
    ProviderError,
    ProviderUnavailable,
    RateLimitError,
)

_MAX = 400
_GENERIC_PARAMS = {"validation_error", "input", "body", "messages"}
_FIELD_PATTERNS = (
    re.compile(r"Unrecognized request argument supplied: ([\w.\[\]]+)"),
    re.compile(r"Unknown parameter: '([^']+)'"),
    re.compile(r"Unsupported parameter: '([^']+)'"),
    re.compile(r"The (\w+) in the thinking mode must be passed back"),
    re.compile(r"^(\w+)=\S+ is not supported"),
)
_PATH_PREFIX = re.compile(r"([\w\[\].]+):\s")  # used with match(), anchored at pos


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _MAX else line[: _MAX - 1] + "…"


def _field_from_message(message: str) -> str | None:
    for start in [0] + [m.end() for m in re.finditer(r": ", message)]:
        m = _PATH_PREFIX.match(message, start)
        if m and "." in m.group(1):  # a path (body.messages.0, …), not a word before a colon
            return m.group(1).removeprefix("body.")
    for pat in _FIELD_PATTERNS:
        m = pat.search(message)
        if m:
            return m.group(1).removeprefix("body.")
    return None


def _raw_message(raw: Any) -> str | None:
    """OpenRouter's ``metadata.raw``: the upstream body, JSON text or plain text."""
    if not isinstance(raw, str) or not raw.strip():
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw
    if isinstance(value, dict):
        inner = value.get("error", value)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return raw


def _fields(value: Any, body_text: str) -> tuple[str, str | None, str | None, str | None, str | None]:
    """(message, type, param, code, openrouter error_type) from any known shape."""
    if isinstance(value, dict):
        err = value.get("error")
        if isinstance(err, str):
            return err, None, None, None, None
        src = err if isinstance(err, dict) else value
        message = src.get("message")
        if not isinstance(message, str):
            detail = value.get("detail")
            message = detail if isinstance(detail, str) else None
        if message is None:
            return _one_line(body_text) or "(empty body)", None, None, None, None
        typ = src.get("type") if isinstance(src.get("type"), str) and src.get("type") != "error" else None
        param = src.get("param") if isinstance(src.get("param"), str) else None
        code = src.get("code") if isinstance(src.get("code"), str) else None
        error_type = None
        meta = src.get("metadata")
        if isinstance(meta, dict):
            raw = _raw_message(meta.get("raw"))
            name = meta.get("provider_name")
            if raw:
                message = f"{message}: {name}: {raw}" if isinstance(name, str) else f"{message}: {raw}"
            error_type = meta.get("error_type") if isinstance(meta.get("error_type"), str) else None
        return message, typ, param, code, error_type
    text = body_text.strip().splitlines()[0] if body_text.strip() else "(empty body)"
    return text, None, None, None, None


def _seconds(text: str | None) -> float | None:
    """A number of seconds (never negative), or None for no number."""
    try:
        return max(float(text), 0.0) if text is not None else None
    except ValueError:
        return None


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` or ``Retry-After`` (seconds, or an HTTP date read
    against the reply's own ``Date`` header: the dialect reads no clock)."""
    if not headers:
        return None
    low = {k.lower(): v for k, v in headers.items()}
    ms = _seconds(low.get("retry-after-ms"))
    if ms is not None:
        return ms / 1000.0
    ra = low.get("retry-after")
    seconds = _seconds(ra)
    if ra is None or seconds is not None:
        return seconds
    when = parsedate_tz(ra)
    now = parsedate_tz(low.get("date", ""))
    if when is None or now is None:
        return None
    return float(max(mktime_tz(when) - mktime_tz(now), 0))


_CLASS_HINTS: dict[type[ProviderError], str] = {
    AuthError: "check the model entry's credential",
    ContextLengthError: (
        "the prompt is over the model's context: check context_size and the window's high water"
    ),
    RateLimitError: "rate limited: wait, or lower the request rate",
    ProviderUnavailable: "the server is unavailable or overloaded: try again later",
}


def _hint(cls: type[ProviderError], field: str | None, message: str) -> str:
    f = field or ""
    for family, profile in PROFILES.items():
        for h in profile.hints:
            if h.says in message:
                return f'{h.needs}: set family = "{family}"'
    if f.endswith("reasoning_content") or "reasoning_content' is unsupported" in message:
        sends = ", ".join(SEND_REASONING)
        return f"this server refuses reasoning_content: set the model's family ({sends} send reasoning)"
    if "prompt_cache_key" in f:
        return 'this server refuses prompt_cache_key: set cache_key = "header" or "off" in the model entry'
    if "cache_control" in f:
        return "this server refuses cache_control: remove it from the model entry"
    if f == "max_tokens":
        return "this model wants max_completion_tokens: set the model entry's family accordingly"
    if "signature" in message and "thinking" in message:
        return "a reasoning block was refused; it went back as it came, so report the session"
    return _CLASS_HINTS.get(cls, "")


def _class(
    status: int | None, typ: str | None, code: str | None, error_type: str | None, message: str
) -> type[ProviderError]:
    kinds = {k for k in (typ, code, error_type) if k}
    low = message.lower()
    if status in (401, 403) or kinds & {"authentication_error", "permission_error", "authentication"}:
        return AuthError
    if (
        status == 413
        or kinds & {"context_length_exceeded", "request_too_large"}
        or "context length" in low
        or "context window" in low
        or "prompt is too long" in low
    ):
        return ContextLengthError
    if status == 429 or kinds & {"rate_limit_error", "rate_limit_exceeded"}:
        return RateLimitError
    # Ollama's errors carry no type: its overload and busy messages say what they are.
    if "overloaded" in low or "server busy" in low:
        return ProviderUnavailable
    if (status is not None and status >= 500) or kinds & {
        "overloaded_error",
        "provider_overloaded",
        "api_error",
        "server_error",
    }:
        return ProviderUnavailable
    return ProviderError


def provider_error(
    provider: str, status: int | None, value: Any, body_text: str, headers: Mapping[str, str] | None
) -> ProviderError:
    message, typ, param, code, error_type = _fields(value, body_text)
    message = _one_line(message)
    field = param if param and param not in _GENERIC_PARAMS else None
    field = field or _field_from_message(message) or (param if param != "validation_error" else None)
    cls = _class(status, typ, code, error_type, message)
    where = f"HTTP {status}" if status is not None else "mid-stream"
    kind = f" ({typ or error_type or code})" if (typ or error_type or code) else ""
    text = f"{provider} {where}{kind}: {message.rstrip('.') or '(no message)'}"
    if field:
        text += f" [field: {field}]"
    hint = _hint(cls, field, message)
    if hint:
        text += f"; {hint}"
    return cls(
        text,
        status=status,
        provider=provider,
        field=field,
        body=body_text[:4000] or None,
        retry_after=retry_after(headers) if cls in (RateLimitError, ProviderUnavailable) else None,
    )


def parse_error(
    provider: str, status: int, body: bytes, headers: Mapping[str, str] | None = None
) -> ProviderError:
    text = body.decode("utf-8", "replace")
    try:
        value: Any = orjson.loads(body) if body.strip() else None
    except orjson.JSONDecodeError:
        value = None
    return provider_error(provider, status, value, text, headers)


def stream_error(provider: str, value: Any) -> ProviderError:
    """An error that came inside a stream whose HTTP status was already 200."""
    return provider_error(provider, None, value, orjson.dumps(value).decode(), None)
