"""Send a request to a model over HTTP: encode with the dialect, stream, decode, retry.

Order of a send: the dialect encodes the request (refusing a block of another origin); the
credential the model names is checked against the URL's origin (refused before anything is
sent); then the request is POSTed and its stream (SSE, or NDJSON for Ollama) is framed by the
dialect's parser and fed to its decoder, the text and thinking pieces each event brought going
to ``on_delta`` as they come. A server that ignores ``stream: true`` and answers one JSON object
(``application/json``) is read whole and decoded as the API's non-streamed reply.

Retries (ADR 0062): a 429, a 5xx, an overloaded reply or a connection failure is tried again up
to ``max_retries`` times, after the server's ``Retry-After`` when it gave one (capped at
``max_delay``), else after ``backoff * 2**n`` seconds (capped too). A retryable error in the
middle of a stream is retried only when nothing of the reply has been shown yet. A Responses
stream that ends without its terminal event is asked again once, and the reply's notes say so.
Each retry is announced through ``on_retry`` as it happens (``retrying in 4 s (2/5): 503 ...``).
A refused connection is not retried: nothing listens there, and waiting will not change that.

Deadlines and size (ADR 0140, ``limits.NetworkLimits``): the connection must open within
``connect_timeout``; no byte may take longer than ``idle_timeout``; no stream *event* longer than
``progress_timeout`` (SSE keep-alive comments are bytes, not progress); the whole send, retries and
their waits included, ends by ``reply_timeout``; a reply body larger than ``max_reply_bytes`` is
refused. A watchdog thread enforces the two event deadlines even while a read is blocked, by
shutting the socket down, so a server that trickles bytes cannot outlast them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson

from nodwyn.dialects import (
    Decoder,
    Dialect,
    StreamEvent,
    WireRequest,
    api_profile,
    dialect_for,
    model_ids,
    parser_for,
)
from nodwyn.errors import ConfigError, DecodeError, OriginError, ProviderError, ProviderUnavailable
from nodwyn.transport.credentials import Credential, Credentials, origin_of
from nodwyn.transport.limits import MIB, NetworkLimits
from nodwyn.values.model import ModelEntry
from nodwyn.values.request import CacheReport, Request, Response

OnDelta = Callable[[str, str], None]  # (kind: "text" | "thinking", fragment)
OnRetry = Callable[[str], None]  # one line: "retrying in 4 s (2/5): 503 ..."
ASKED_AGAIN = "stream ended without a terminal event; asked again"
USER_AGENT = "nodwyn"
ERROR_BODY_MAX = 1 * MIB  # an error body is read up to this much, the rest left unread
_SUMMARY_MAX = 160


class _Incomplete(Exception):
    def __init__(self, decoder: Decoder) -> None:
        super().__init__("stream ended without a terminal event")
        self.decoder = decoder


def join_url(base_url: str, path: str) -> str:
    """The base URL and the dialect's path. A base URL with a path of its own names the API's root,
    version included, as the providers' documents and the OpenAI SDKs give it
    (``https://openrouter.ai/api/v1``, ``https://generativelanguage.googleapis.com/v1beta/openai``):
    the dialect's path goes under it without its own ``/v1``. A bare host gets the whole path."""
    base = base_url.rstrip("/")
    if urlsplit(base).path and path.startswith("/v1/"):
        return base + path[3:]
    return base + path


class HttpBackend:
    """Sends provider-neutral requests to HTTP model servers with the given credentials."""

    def __init__(
        self,
        credentials: Credentials,
        *,
        limits: NetworkLimits | None = None,
        client: httpx.Client | None = None,
        max_retries: int | None = None,
        backoff: float = 1.0,
        max_delay: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        on_retry: OnRetry | None = None,
    ) -> None:
        self.credentials = credentials
        self.limits = limits or NetworkLimits()
        self._own_client = client is None
        self.client = client or httpx.Client(
            timeout=httpx.Timeout(self.limits.idle_timeout, connect=self.limits.connect_timeout)
        )
        self.max_retries = self.limits.max_retries if max_retries is None else max_retries
        self.backoff = backoff
        self.max_delay = max_delay
        self.sleep = sleep
        self.on_retry = on_retry

    def close(self) -> None:
        if self._own_client:
            self.client.close()

    def __enter__(self) -> HttpBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public ---------------------------------------------------------------------------------

    def send(
        self,
        request: Request,
        settings: ModelEntry,
        *,
        session_key: str | None,
        on_delta: OnDelta | None = None,
        images: Mapping[str, bytes] | None = None,
        diagnose_against: str | None = None,
    ) -> Response:
        dialect = dialect_for(settings)
        credential = self._credential(settings)
        asked = diagnose_against if settings.cache_diagnostics else None
        wire = dialect.encode(
            request,
            session_key=session_key,
            plan_usage=credential is not None and credential.plan_usage,
            stream=True,
            images=images or {},
            diagnose_against=asked,
        )
        url, headers = self._address(settings, wire, credential)
        body = wire.body_bytes()
        notes: list[str] = []
        asked_again = False
        attempt = 0
        deadline = time.monotonic() + self.limits.reply_timeout
        while True:
            shown = [False]
            try:
                response = self._stream_once(
                    dialect, settings, wire.method, url, headers, body, on_delta, shown, deadline
                )
            except _Incomplete as inc:
                if dialect.asks_again_when_cut and not asked_again:
                    asked_again = True
                    notes.append(ASKED_AGAIN)
                    continue
                inc.decoder.finish()  # raises the dialect's DecodeError naming what was missing
                raise DecodeError(f"{settings.name}: the stream ended before its terminal event") from None
            except ProviderError as exc:
                if shown[0] or not self._waited_to_retry(exc, attempt, deadline):
                    raise
                attempt += 1
                continue
            if notes:
                response = dataclasses.replace(response, notes=(*response.notes, *notes))
            return asked_about(response, asked)

    def list_models(self, settings: ModelEntry) -> list[str]:
        """The server's model ids (never with the session key)."""
        return model_ids(self.model_list(settings), settings)

    def model_list(self, settings: ModelEntry) -> Any:
        """The server's model list as it sent it (``dialects.model_context`` reads a context size)."""
        dialect = dialect_for(settings)
        wire = dialect.models_request()
        url, headers = self._address(settings, wire, self._credential(settings))
        attempt = 0
        deadline = time.monotonic() + self.limits.reply_timeout
        while True:
            try:
                return self._request(dialect, settings, wire.method, url, headers, deadline)
            except ProviderError as exc:
                if not self._waited_to_retry(exc, attempt, deadline):
                    raise
                attempt += 1

    def delay(self, exc: ProviderError, attempt: int) -> float:
        """Seconds to wait before retry ``attempt`` (0-based): Retry-After if given, else backoff."""
        if exc.retry_after is not None and exc.retry_after >= 0:
            return float(min(exc.retry_after, self.max_delay))
        return float(min(self.backoff * (2**attempt), self.max_delay))

    # -- internals ------------------------------------------------------------------------------

    def _waited_to_retry(self, exc: ProviderError, attempt: int, deadline: float) -> bool:
        """Whether ``exc`` may be tried again after ``attempt`` retries; if so, after the wait,
        announced first. A retry whose wait would end past the reply deadline is not made."""
        if not exc.retryable or attempt >= self.max_retries:
            return False
        wait = self.delay(exc, attempt)
        if time.monotonic() + wait >= deadline:
            raise _with_message(
                exc,
                f"{exc} (not retried: waiting {wait:g} s would pass the reply_timeout of "
                f"{self.limits.reply_timeout:g} s; raise [network] reply_timeout in config.toml)",
            ) from None
        if self.on_retry is not None:
            self.on_retry(f"retrying in {wait:g} s ({attempt + 2}/{self.max_retries + 1}): {_summary(exc)}")
        self.sleep(wait)
        return True

    def _credential(self, settings: ModelEntry) -> Credential | None:
        return None if settings.credential is None else self.credentials.get(settings.credential)

    @staticmethod
    def _address(
        settings: ModelEntry, wire: WireRequest, credential: Credential | None
    ) -> tuple[str, dict[str, str]]:
        """Where ``wire`` goes and its headers; a malformed URL, or one outside the credential's
        origins, is refused here, before anything is sent."""
        if not settings.base_url:
            raise ConfigError(
                f"model {settings.name!r} has no base_url; set it in its [models.{settings.name}] entry"
            )
        url = join_url(settings.base_url, wire.path)
        origin_of(url)
        headers = {"user-agent": USER_AGENT, **wire.headers}
        for name in headers:
            if name.lower() in {"authorization", "x-api-key"}:
                raise OriginError(
                    f"{settings.name}: the dialect put a {name} header on the request; only the transport may"
                )
        if credential is not None:
            credential.check(url)
            headers.update(credential.auth_headers(api_profile(settings).auth_header))
        return url, headers

    def _timeout(self, deadline: float) -> httpx.Timeout:
        """httpx's per-read timeouts for one attempt, never past the reply deadline."""
        left = max(deadline - time.monotonic(), 0.001)
        lim = self.limits
        return httpx.Timeout(
            connect=min(lim.connect_timeout, left),
            read=min(lim.idle_timeout, left),
            write=min(lim.idle_timeout, left),
            pool=min(lim.connect_timeout, left),
        )

    def _request(
        self,
        dialect: Dialect,
        settings: ModelEntry,
        method: str,
        url: str,
        headers: dict[str, str],
        deadline: float,
    ) -> Any:
        guard = _Guard(self.limits, settings, url, deadline)
        try:
            with self.client.stream(method, url, headers=headers, timeout=self._timeout(deadline)) as resp:
                _refuse_status(dialect, settings, url, resp)
                content = _read_whole(resp, guard)
                status = resp.status_code
        except httpx.HTTPError as exc:
            raise guard.failure(exc) from None
        try:
            return orjson.loads(content)
        except orjson.JSONDecodeError:
            raise DecodeError(
                f"{settings.name}: the model list at {origin_of(url)} is not JSON; "
                "check that base_url points at the API, not at a web page or proxy",
                status=status,
            ) from None

    def _stream_once(
        self,
        dialect: Dialect,
        settings: ModelEntry,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes,
        on_delta: OnDelta | None,
        shown: list[bool],
        deadline: float,
    ) -> Response:
        parser = parser_for(settings)
        decoder = dialect.decoder(settings.origin)
        guard = _Guard(self.limits, settings, url, deadline)

        def feed(events: list[StreamEvent]) -> None:
            for ev in events:
                pieces = decoder.feed(ev)
                if on_delta is not None:
                    for kind, text in pieces:
                        shown[0] = True
                        on_delta(kind, text)

        try:
            with self.client.stream(
                method, url, headers=headers, content=body, timeout=self._timeout(deadline)
            ) as resp:
                _refuse_status(dialect, settings, url, resp)
                if _is_whole_json(resp):
                    with guard.watching(resp):
                        whole = _read_whole(resp, guard)
                    if _one_object(whole):
                        return _whole_reply(dialect, settings, whole, on_delta, shown)
                    feed(parser.feed(whole))  # a stream labelled as JSON: read it as the stream
                    feed(parser.close())
                else:
                    with guard.watching(resp):
                        for chunk in resp.iter_bytes():
                            events = parser.feed(chunk)
                            guard.took(chunk, progress=bool(events))
                            feed(events)
                        guard.check()
                        feed(parser.close())
        except httpx.HTTPError as exc:
            raise guard.failure(exc) from None
        if not decoder.complete:
            raise _Incomplete(decoder)
        return decoder.finish()


class _Guard:
    """One attempt's deadlines and byte count (see the module docstring).

    The reading thread reports each chunk (``took``) and checks after it; a watchdog thread,
    while ``watching``, shuts the socket down when the reply or progress deadline passes with a
    read still blocked, and the reader then finds ``fired`` set and raises the deadline's error."""

    def __init__(self, limits: NetworkLimits, settings: ModelEntry, url: str, deadline: float) -> None:
        self.limits = limits
        self.settings = settings
        self.url = url
        self.deadline = deadline
        self.progress_at = time.monotonic()
        self.size = 0
        self.fired: str | None = None
        self._done = threading.Event()

    def took(self, chunk: bytes, *, progress: bool) -> None:
        self.size += len(chunk)
        if self.size > self.limits.max_reply_bytes:
            raise ProviderError(
                f"{self.settings.name}: the reply from {origin_of(self.url)} passed "
                f"{_size(self.limits.max_reply_bytes)} and was cut off; raise [network] max_reply_mb in "
                "config.toml if replies this large are expected",
                provider=self.settings.server or self.settings.api,
            )
        if progress:
            self.progress_at = time.monotonic()
        self.check()

    def due(self) -> tuple[float, str]:
        """The next deadline and its name."""
        progress = self.progress_at + self.limits.progress_timeout
        return (progress, "progress") if progress < self.deadline else (self.deadline, "reply")

    def check(self) -> None:
        when, name = self.due()
        if self.fired is None and time.monotonic() >= when:
            self.fired = name
        if self.fired is not None:
            raise self._expired(self.fired)

    def _expired(self, name: str) -> ProviderUnavailable:
        where = f"{self.settings.name}: {origin_of(self.url)}"
        lim = self.limits
        if name == "progress":
            message = (
                f"{where} sent no stream event for {lim.progress_timeout:g} s (keep-alives do not count); "
                "raise [network] progress_timeout in config.toml if the model thinks that long"
            )
        else:
            message = (
                f"{where} did not finish its reply within {lim.reply_timeout:g} s; "
                "raise [network] reply_timeout in config.toml if replies take that long"
            )
        return ProviderUnavailable(message, provider=self.settings.server or self.settings.api)

    def failure(self, exc: httpx.HTTPError) -> ProviderError:
        """What an httpx error means here (a read the watchdog cut short is its deadline's error)."""
        if self.fired is not None:
            return self._expired(self.fired)
        return _unreachable(self.settings, self.url, exc, self.limits)

    @contextlib.contextmanager
    def watching(self, resp: httpx.Response) -> Iterator[None]:
        """Runs ``watch`` on the response's socket in a thread of its own, when httpx exposes it."""
        stream = resp.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        thread = None
        if isinstance(sock, socket.socket):
            thread = threading.Thread(
                target=self.watch, args=(sock,), name="nodwyn-reply-watchdog", daemon=True
            )
            thread.start()
        try:
            yield
        finally:
            self._done.set()
            if thread is not None:
                thread.join()

    def watch(self, sock: socket.socket) -> None:
        """The watchdog's loop: wait for the next deadline, re-reading it as progress moves it."""
        while True:
            when, name = self.due()
            left = when - time.monotonic()
            if left <= 0:
                break
            if self._done.wait(left):
                return
        if self._done.is_set():
            return
        self.fired = name
        # the plain socket's shutdown (an SSL socket's own would drop its state under the reader)
        with contextlib.suppress(OSError):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _is_whole_json(resp: httpx.Response) -> bool:
    """A reply that is one JSON object (``application/json``) although a stream was asked for:
    a server or proxy that ignores ``stream: true``. Streams are ``text/event-stream`` or, from
    Ollama, ``application/x-ndjson``."""
    kind: str = resp.headers.get("content-type", "")
    return kind.split(";")[0].strip().lower() == "application/json"


def _read_whole(resp: httpx.Response, guard: _Guard) -> bytes:
    """The whole body, within the attempt's size cap and deadlines."""
    parts: list[bytes] = []
    for chunk in resp.iter_bytes():
        guard.took(chunk, progress=True)
        parts.append(chunk)
    guard.check()
    return b"".join(parts)


def _one_object(body: bytes) -> bool:
    try:
        value: object = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return isinstance(value, dict)


def _whole_reply(
    dialect: Dialect, settings: ModelEntry, body: bytes, on_delta: OnDelta | None, shown: list[bool]
) -> Response:
    """A reply sent as one JSON object, decoded as the API's non-streamed answer; its thinking and
    text go to ``on_delta`` at once, as a stream's last pieces would."""
    response = dialect.decode_body(body, settings.origin)
    if on_delta is not None:
        for kind, text in (("thinking", response.thinking), ("text", response.text)):
            if text:
                shown[0] = True
                on_delta(kind, text)
    return response


def _read_capped(resp: httpx.Response, limit: int) -> bytes:
    """At most ``limit`` bytes of a body (an error page has no business being larger)."""
    parts: list[bytes] = []
    size = 0
    for chunk in resp.iter_bytes():
        parts.append(chunk[: limit - size])
        size += len(parts[-1])
        if size >= limit:
            break
    return b"".join(parts)


def _size(n: int) -> str:
    return f"{n / MIB:g} MB" if n >= MIB else f"{n} bytes"


def _summary(exc: ProviderError) -> str:
    """An error on one short line, its status first."""
    text = " ".join(str(exc).split())
    if exc.status is not None:
        text = f"{exc.status} {text}"
    return text if len(text) <= _SUMMARY_MAX else text[: _SUMMARY_MAX - 1] + "…"


def _with_message(exc: ProviderError, message: str) -> ProviderError:
    """``exc`` again, same class and evidence, with a new message."""
    new = type(exc)(
        message,
        status=exc.status,
        provider=exc.provider,
        field=exc.field,
        body=exc.body,
        retry_after=exc.retry_after,
    )
    new.retryable = False
    return new


def _refused(exc: BaseException) -> bool:
    """Whether a connect failure was a refusal (nothing listens there)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, ConnectionRefusedError):
            return True
        cur = cur.__cause__ or cur.__context__
    return "connection refused" in str(exc).lower()


def _unreachable(
    settings: ModelEntry, url: str, exc: httpx.HTTPError, limits: NetworkLimits
) -> ProviderUnavailable:
    where = f"{settings.name}: {origin_of(url)}"
    provider = settings.server or settings.api
    if isinstance(exc, httpx.ConnectError) and _refused(exc):
        refused = ProviderUnavailable(
            f"{where} refused the connection; start the server, or check base_url's host and port",
            provider=provider,
        )
        refused.retryable = False  # nothing listens there: waiting will not change that
        return refused
    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        message = (
            f"{where} did not accept a connection within {limits.connect_timeout:g} s; check that the "
            "server is up and reachable (or raise [network] connect_timeout in config.toml)"
        )
    elif isinstance(exc, httpx.TimeoutException):
        message = (
            f"{where} sent nothing for {limits.idle_timeout:g} s; the server is stalled or overloaded "
            "(raise [network] idle_timeout in config.toml if it is just slow)"
        )
    else:
        message = (
            f"{where}: the connection failed ({type(exc).__name__}); "
            "check that the server is running and base_url is right"
        )
    return ProviderUnavailable(message, provider=provider)


def _refuse_status(dialect: Dialect, settings: ModelEntry, url: str, resp: httpx.Response) -> None:
    """An error status is the dialect's error. A redirect is never followed: the credential is bound
    to this origin, not to where it points. A 204 (or a 1xx) brings no reply at all."""
    status = resp.status_code
    if status >= 400:
        raise dialect.parse_error(status, _read_capped(resp, ERROR_BODY_MAX), dict(resp.headers))
    if 300 <= status < 400:
        where = resp.headers.get("location", "")
        to = f" to {where.split('?', 1)[0]}" if where else ""
        message = (
            f"{settings.name}: {origin_of(url)} answered HTTP {status}{to}; nodwyn does not follow "
            "redirects with a credential: set base_url to the server's real address"
        )
    elif status == 204:
        message = (
            f"{settings.name}: {origin_of(url)} answered HTTP {status} with no reply to read; "
            "check that base_url points at the model API, not at a proxy or another service"
        )
    else:
        return
    raise ProviderError(message, status=status, provider=settings.server or settings.api)


def asked_about(response: Response, asked: str | None) -> Response:
    """The reply with the id its cache diagnosis was asked against; a diagnosis asked for and not
    given is the provider's "no divergence" (Anthropic's ``diagnostics: null``; ADR 0312)."""
    if asked is None:
        return dataclasses.replace(response, cache_report=None)
    report = response.cache_report or CacheReport()
    return dataclasses.replace(response, cache_report=dataclasses.replace(report, against=asked))
