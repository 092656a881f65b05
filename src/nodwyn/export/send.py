"""Posting an OTLP/HTTP export: protobuf (the protocol's default) or JSON, one request."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

import httpx

from nodwyn.errors import ConfigError, ExportError

TRACES_PATH = "/v1/traces"
MAX_REPLY = 64 << 10  # bytes of a collector's reply read at most (only its first line is shown)
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
            f"--otlp-endpoint {shown_url(endpoint)!r} is not an http(s) URL; "
            "pass e.g. http://127.0.0.1:4318 (a collector's OTLP/HTTP port)"
        )
    if parts.path in ("", "/"):
        parts = parts._replace(path=TRACES_PATH)
    return urlunsplit(parts)


def shown_url(url: str) -> str:
    """``url`` as it may be printed: a password (or a whole ``user:password@``) is left out."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.password is None and parts.username is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    user = f"{parts.username}:***@" if parts.password is not None else "***@"
    return urlunsplit(parts._replace(netloc=user + host))


def post_otlp(
    endpoint: str,
    body: bytes,
    protocol: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    max_reply: int = MAX_REPLY,
) -> str:
    """Send ``body`` (an encoded ExportTraceServiceRequest) and return the URL it went to, as it
    may be printed (no password); a refusal or an unreachable collector is one ``ExportError``
    line (exit 16). The whole exchange ends by ``timeout`` seconds, however slowly the collector
    answers, and at most ``max_reply`` bytes of its reply are read (ADR 0334)."""
    url = traces_url(endpoint)
    where = shown_url(url)
    sent = {"content-type": CONTENT_TYPES[protocol], **(headers or {})}
    exchange = _Exchange(url, body, sent, timeout, max_reply)
    worker = threading.Thread(target=exchange.run, name="nodwyn-otlp", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        exchange.cut()
        raise ExportError(
            f"OTLP export to {where} got no whole reply within {timeout:g} s; "
            "check that the collector there answers (it may be overloaded or dripping its reply)"
        )
    if exchange.error is not None:
        exc = exchange.error
        detail = str(exc).replace(url, where) if url != where else str(exc)
        raise ExportError(
            f"OTLP export to {where} failed: {type(exc).__name__}: {detail}; "
            "check that a collector listens there"
        )
    status, text = exchange.status, exchange.text
    if not 200 <= status < 300:
        first = text.strip().splitlines()[0][:200] if text.strip() else ""
        raise ExportError(
            f"OTLP export to {where} was refused: HTTP {status}"
            + (f" ({first})" if first else "")
            + "; check the endpoint, --otlp-protocol and any --otlp-header the collector needs"
        )
    return where


class _Exchange:
    """One POST on a worker thread: its status and the first ``cap`` bytes of its reply, or its
    error. ``cut`` shuts the socket down under a read still blocked when the deadline passes."""

    def __init__(self, url: str, body: bytes, headers: dict[str, str], timeout: float, cap: int) -> None:
        self.url, self.body, self.headers, self.timeout, self.cap = url, body, headers, timeout, cap
        self.status = 0
        self.text = ""
        self.error: httpx.HTTPError | OSError | ValueError | None = None
        self._sock: socket.socket | None = None

    def run(self) -> None:
        try:
            with (
                httpx.Client(timeout=self.timeout) as client,
                client.stream("POST", self.url, content=self.body, headers=self.headers) as reply,
            ):
                stream = reply.extensions.get("network_stream")
                sock = stream.get_extra_info("socket") if stream is not None else None
                self._sock = sock if isinstance(sock, socket.socket) else None
                kept = bytearray()
                for chunk in reply.iter_bytes():
                    kept += chunk[: self.cap - len(kept)]
                    if len(kept) >= self.cap:
                        break  # the rest is never read
                self.status = reply.status_code
                self.text = kept.decode("utf-8", "replace")
        except (httpx.HTTPError, OSError, ValueError) as exc:  # a reply that is not HTTP, a cut socket
            self.error = exc

    def cut(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                socket.socket.shutdown(self._sock, socket.SHUT_RDWR)
