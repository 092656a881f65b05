"""Send a request to a model over HTTP: encode with the dialect, stream, decode, retry.

Order of a send: the dialect encodes the request (refusing a block of another origin); the
credential the model names is checked against the URL's origin (refused before anything is
sent); then the request is POSTed and its stream (SSE, or NDJSON for Ollama) is framed by the
dialect's parser and fed to its decoder, the text and thinking pieces each event brought going
to ``on_delta`` as they come.

Retries (ADR 0062): a 429, a 5xx, an overloaded reply or a connection failure is tried again up
to ``max_retries`` times, after the server's ``Retry-After`` when it gave one (capped at
``max_delay``), else after ``backoff * 2**n`` seconds (capped too). A retryable error in the
middle of a stream is retried only when nothing of the reply has been shown yet. A Responses
stream that ends without its terminal event is asked again once, and the reply's notes say so.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import orjson

from nodwyn.dialects import dialect_for, parser_for
from nodwyn.dialects.base import Decoder, Dialect, StreamEvent, WireRequest
from nodwyn.errors import ConfigError, DecodeError, OriginError, ProviderError, ProviderUnavailable
from nodwyn.transport.credentials import Credential, Credentials, origin_of
from nodwyn.values.model import ModelSettings
from nodwyn.values.request import Request, Response

OnDelta = Callable[[str, str], None]  # (kind: "text" | "thinking", fragment)
ASKED_AGAIN = "stream ended without a terminal event; asked again"
USER_AGENT = "nodwyn"


class _Incomplete(Exception):
    def __init__(self, decoder: Decoder) -> None:
        super().__init__("stream ended without a terminal event")
        self.decoder = decoder


def join_url(base_url: str, path: str) -> str:
    """The base URL and the dialect's path, without a doubled ``/v1`` when the base already ends in it."""
    base = base_url.rstrip("/")
    if base.endswith("/v1") and path.startswith("/v1/"):
        base = base[:-3]
    return base + path


class HttpBackend:
    """Sends provider-neutral requests to HTTP model servers with the given credentials."""

    def __init__(
        self,
        credentials: Credentials,
        *,
        client: httpx.Client | None = None,
        timeout: float = 300.0,
        connect_timeout: float = 15.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_delay: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.credentials = credentials
        self._own_client = client is None
        self.client = client or httpx.Client(timeout=httpx.Timeout(timeout, connect=connect_timeout))
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_delay = max_delay
        self.sleep = sleep

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
        settings: ModelSettings,
        *,
        session_key: str | None,
        on_delta: OnDelta | None = None,
        images: Mapping[str, bytes] | None = None,
    ) -> Response:
        dialect = dialect_for(settings)
        credential = self._credential(settings)
        wire = dialect.encode(
            request,
            settings,
            session_key=session_key,
            plan_usage=credential is not None and credential.plan_usage,
            stream=True,
            images=images or {},
        )
        url = self._url(settings, wire.path)
        headers = self._headers(wire, credential, settings, url)
        body = wire.body_bytes()
        notes: list[str] = []
        asked_again = False
        attempt = 0
        while True:
            shown = [False]
            try:
                response = self._stream_once(
                    dialect, settings, wire.method, url, headers, body, on_delta, shown
                )
            except _Incomplete as inc:
                if dialect.asks_again_when_cut and not asked_again:
                    asked_again = True
                    notes.append(ASKED_AGAIN)
                    continue
                inc.decoder.finish()  # raises the dialect's DecodeError naming what was missing
                raise DecodeError(f"{settings.name}: the stream ended before its terminal event") from None
            except ProviderError as exc:
                if not shown[0] and self._waited_to_retry(exc, attempt):
                    attempt += 1
                    continue
                raise
            if notes:
                response = dataclasses.replace(response, notes=(*response.notes, *notes))
            return response

    def list_models(self, settings: ModelSettings) -> list[str]:
        """The server's model ids (never with the session key)."""
        dialect = dialect_for(settings)
        credential = self._credential(settings)
        wire = dialect.models_request(settings)
        url = self._url(settings, wire.path)
        headers = self._headers(wire, credential, settings, url)
        attempt = 0
        while True:
            try:
                reply = self._request(dialect, settings, wire.method, url, headers)
                break
            except ProviderError as exc:
                if self._waited_to_retry(exc, attempt):
                    attempt += 1
                    continue
                raise
        return model_ids(reply, settings)

    def delay(self, exc: ProviderError, attempt: int) -> float:
        """Seconds to wait before retry ``attempt`` (0-based): Retry-After if given, else backoff."""
        if exc.retry_after is not None and exc.retry_after >= 0:
            return float(min(exc.retry_after, self.max_delay))
        return float(min(self.backoff * (2**attempt), self.max_delay))

    # -- internals ------------------------------------------------------------------------------

    def _waited_to_retry(self, exc: ProviderError, attempt: int) -> bool:
        """Whether ``exc`` may be tried again after ``attempt`` retries; if so, after the wait."""
        if not exc.retryable or attempt >= self.max_retries:
            return False
        self.sleep(self.delay(exc, attempt))
        return True

    def _credential(self, settings: ModelSettings) -> Credential | None:
        return None if settings.credential is None else self.credentials.get(settings.credential)

    @staticmethod
    def _url(settings: ModelSettings, path: str) -> str:
        if not settings.base_url:
            raise ConfigError(
                f"model {settings.name!r} has no base_url; set it in its [models.{settings.name}] entry"
            )
        url = join_url(settings.base_url, path)
        origin_of(url)  # a malformed URL is a ConfigError here, before anything is sent
        return url

    @staticmethod
    def _headers(
        wire: WireRequest, credential: Credential | None, settings: ModelSettings, url: str
    ) -> dict[str, str]:
        headers = {"user-agent": USER_AGENT, **wire.headers}
        for name in headers:
            if name.lower() in {"authorization", "x-api-key"}:
                raise OriginError(
                    f"{settings.name}: the dialect put a {name} header on the request; only the transport may"
                )
        if credential is not None:
            credential.check(url)  # refused before anything is sent
            headers.update(credential.auth_headers(settings.api))
        return headers

    def _request(
        self, dialect: Dialect, settings: ModelSettings, method: str, url: str, headers: dict[str, str]
    ) -> Any:
        try:
            resp = self.client.request(method, url, headers=headers)
        except httpx.HTTPError as exc:
            raise _unreachable(settings, url, exc) from None
        if resp.status_code >= 400:
            raise dialect.parse_error(resp.status_code, resp.content, dict(resp.headers))
        if resp.status_code >= 300:
            raise _unexpected(settings, url, resp)
        try:
            return orjson.loads(resp.content)
        except orjson.JSONDecodeError:
            raise DecodeError(
                f"{settings.name}: the model list at {origin_of(url)} is not JSON; "
                "check that base_url points at the API, not at a web page or proxy",
                status=resp.status_code,
            ) from None

    def _stream_once(
        self,
        dialect: Dialect,
        settings: ModelSettings,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes,
        on_delta: OnDelta | None,
        shown: list[bool],
    ) -> Response:
        parser = parser_for(settings)
        decoder = dialect.decoder(settings.origin)

        def feed(events: list[StreamEvent]) -> None:
            for ev in events:
                pieces = decoder.feed(ev)
                if on_delta is not None:
                    for kind, text in pieces:
                        shown[0] = True
                        on_delta(kind, text)

        try:
            with self.client.stream(method, url, headers=headers, content=body) as resp:
                if resp.status_code >= 400:
                    raise dialect.parse_error(resp.status_code, resp.read(), dict(resp.headers))
                if resp.status_code >= 300 or resp.status_code == 204:
                    raise _unexpected(settings, url, resp)
                for chunk in resp.iter_bytes():
                    feed(parser.feed(chunk))
                feed(parser.close())
        except httpx.HTTPError as exc:
            raise _unreachable(settings, url, exc) from None
        if not decoder.complete:
            raise _Incomplete(decoder)
        return decoder.finish()


def _unreachable(settings: ModelSettings, url: str, exc: httpx.HTTPError) -> ProviderUnavailable:
    kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "failed"
    return ProviderUnavailable(
        f"{settings.name}: the connection to {origin_of(url)} {kind} ({type(exc).__name__}); "
        "check that the server is running and base_url is right",
        provider=settings.server or settings.api,
    )


def _unexpected(settings: ModelSettings, url: str, resp: httpx.Response) -> ProviderError:
    """A redirect is never followed: the credential is bound to this origin, not to where it points."""
    where = resp.headers.get("location", "")
    to = f" to {where.split('?', 1)[0]}" if where else ""
    return ProviderError(
        f"{settings.name}: {origin_of(url)} answered HTTP {resp.status_code}{to}; nodwyn does not follow "
        "redirects with a credential: set base_url to the server's real address",
        status=resp.status_code,
        provider=settings.server or settings.api,
    )


def model_ids(reply: Any, settings: ModelSettings) -> list[str]:
    """Model ids from a model-list reply: Ollama ``models[].name``, else ``data[].id``."""
    if isinstance(reply, dict):
        if isinstance(reply.get("models"), list):
            return [str(m.get("name") or m.get("model")) for m in reply["models"] if isinstance(m, dict)]
        if isinstance(reply.get("data"), list):
            return [str(m["id"]) for m in reply["data"] if isinstance(m, dict) and "id" in m]
    raise DecodeError(
        f"{settings.name}: the model list has neither models[] nor data[]; check that the entry's api "
        f"({settings.api}) is the one the server at base_url speaks"
    )
