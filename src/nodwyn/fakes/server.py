"""Run a fake API as a real HTTP server on 127.0.0.1 (stdlib ThreadingHTTPServer, ADR 0061).

Each reply is streamed as written: the status line, the headers, then each chunk (an SSE event
or an NDJSON line) flushed on its own, the connection closed at the end (HTTP/1.0 framing), so
a client sees a stream cut short exactly as a real one would.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Mapping
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, get_args

from nodwyn.errors import ConfigError
from nodwyn.fakes import anthropic, ollama, openai_chat, responses
from nodwyn.fakes.base import Handler, ReceivedRequest, Reply, State
from nodwyn.fakes.cache import REPLICAS, CacheKind, Expiry, Lookup, make_cache
from nodwyn.fakes.script import Script, ScriptItem, Stall
from nodwyn.values.model import Family

FakeApi = Literal["ollama", "openai-chat", "responses", "anthropic"]
HANDLERS: dict[str, Handler] = {
    "ollama": ollama.handle,
    "openai-chat": openai_chat.handle,
    "responses": responses.handle,
    "anthropic": anthropic.handle,
}
DEFAULT_CACHE: dict[str, CacheKind] = {
    "ollama": "single",
    "openai-chat": "blocks",
    "responses": "blocks",
    "anthropic": "breakpoints",
}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read fake.requests
        return

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        received = ReceivedRequest(
            method=self.command,
            path=self.path.split("?", 1)[0],
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            raw=raw,
        )
        state = self.server.state
        with state.lock:
            state.requests.append(received)
            state.stall = None
            reply = self.server.handler(state, received)
            stall = state.stall
        if stall is not None and stall.when == "accept":
            state.closing.wait()  # the request was read; nothing is ever answered
            return
        self._write(reply, stall)

    def _write(self, reply: Reply, stall: Stall | None = None) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("connection", "close")
        self.end_headers()
        closing = self.server.state.closing
        try:
            if stall is not None and stall.when == "headers":
                self.wfile.flush()
                closing.wait()
                return
            if stall is not None and stall.when == "keepalive":
                while not closing.is_set():
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                    closing.wait(stall.interval)
                return
            pause = stall.interval if stall is not None and stall.when in ("drip", "pace") else 0.0
            for chunk in reply.chunks:
                if closing.is_set():
                    return
                self.wfile.write(chunk)
                self.wfile.flush()
                if pause:
                    time.sleep(pause)
        except (BrokenPipeError, ConnectionResetError):
            pass

    do_GET = _serve
    do_POST = _serve


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: State
    handler: Handler


class FakeServer:
    """A fake provider on 127.0.0.1: ``with FakeServer(api="openai-chat", script=[...]) as fake``.

    ``fake.url`` is the server's base URL, ``fake.requests`` what it received, ``fake.remaining``
    the script items it has not used, ``fake.lookups`` what its cache model found per request.
    ``cache_ttl_seconds``: the cache forgets an entry unused for that long (off by default;
    ``fakes.cache.Expiry``). ``model_fields``: per model id, the fields its model-list entry adds,
    as a provider publishes them (``{"fake-model": {"context_length": 131072}}``).
    """

    def __init__(
        self,
        *,
        api: FakeApi,
        script: Iterable[ScriptItem | Mapping[str, Any]] = (),
        cache: CacheKind | None = None,
        family: str | None = None,
        replicas: int = REPLICAS,
        seed: int = 0,
        api_key: str | None = None,
        models: tuple[str, ...] = ("fake-model",),
        port: int = 0,
        cache_ttl_seconds: float | None = None,
        model_fields: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        if api not in HANDLERS:
            raise ValueError(f"unknown fake api {api!r}; use {', '.join(HANDLERS)}")
        if family is not None and family not in get_args(Family):
            raise ValueError(f"unknown server family {family!r}; use {', '.join(get_args(Family))}")
        self.api = api
        self._script = Script(script)
        expiry = Expiry(seconds=cache_ttl_seconds) if cache_ttl_seconds is not None else None
        self._new_state = partial(
            State,
            api=api,
            family=family,
            cache=make_cache(cache or DEFAULT_CACHE[api], replicas=replicas, seed=seed, expiry=expiry),
            script=self._script,
            api_key=api_key,
            models=models,
            model_fields=model_fields or {},
        )
        self._port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeServer:
        try:
            server = _Server(("127.0.0.1", self._port), _Handler)
        except OSError as exc:
            raise ConfigError(
                f"fake {self.api}: cannot listen on 127.0.0.1:{self._port} ({exc.strerror}); "
                "pick another --port (0 picks a free one)"
            ) from None
        server.state = self._new_state(name=f"fake-{self.api}-{server.server_address[1]}")
        server.handler = HANDLERS[self.api]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=f"fake-{self.api}", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.state.closing.set()  # stalled replies end
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def _state(self) -> State:
        if self._server is None:
            raise RuntimeError("the fake server is not started; use it as a context manager")
        return self._server.state

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the fake server is not started; use it as a context manager")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[ReceivedRequest]:
        with self._state.lock:
            return list(self._state.requests)

    @property
    def lookups(self) -> list[Lookup]:
        with self._state.lock:
            return list(self._state.lookups)

    @property
    def remaining(self) -> list[ScriptItem]:
        return self._script.remaining
