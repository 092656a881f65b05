"""Posting an OTLP/HTTP export: protobuf (the protocol's default) or JSON, one request."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

import httpx

from nodwyn.errors import ConfigError, ExportError

TRACES_PATH = "/v1/traces"
CONTENT_TYPES = {"protobuf": "application/x-protobuf", "json": "application/json"}


def traces_url(endpoint: str) -> str:
    """The URL to post to: an endpoint with no path gets OTLP's ``/v1/traces`` (as
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` does); one with a path is used as it is (as
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is)."""
    try:
        parts = urlsplit(endpoint)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"--otlp-endpoint {endpoint!r} is not an http(s) URL; "
            "pass e.g. http://127.0.0.1:4318 (a collector's OTLP/HTTP port)"
        )
    if parts.path in ("", "/"):
        parts = parts._replace(path=TRACES_PATH)
    return urlunsplit(parts)


def post_otlp(
    endpoint: str,
    body: bytes,
    protocol: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> str:
    """Send ``body`` (an encoded ExportTraceServiceRequest) and return the URL it went to; a
    refusal or an unreachable collector is one ``ExportError`` line (exit 16)."""
    url = traces_url(endpoint)
    sent = {"content-type": CONTENT_TYPES[protocol], **(headers or {})}
    try:
        reply = httpx.post(url, content=body, headers=sent, timeout=timeout)
    except httpx.HTTPError as exc:
        raise ExportError(
            f"OTLP export to {url} failed: {type(exc).__name__}: {exc}; check that a collector listens there"
        ) from None
    if not 200 <= reply.status_code < 300:
        text = reply.text.strip().splitlines()[0][:200] if reply.text.strip() else ""
        raise ExportError(
            f"OTLP export to {url} was refused: HTTP {reply.status_code}"
            + (f" ({text})" if text else "")
            + "; check the endpoint, --otlp-protocol and any --otlp-header the collector needs"
        )
    return url
