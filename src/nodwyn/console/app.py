"""The console's Starlette app: read-only GET routes over a session store.

Pages: ``/`` (sessions) and ``/s/{id}`` (one session); the page's script reads the JSON routes
under ``/api``. A session's totals come from an aggregator kept per session and fed only the
events appended since the last look; the transcript is read a page at a time from the log's
index, so a session page costs the same on a 100 MB log as on a small one after the first
aggregation.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from nodwyn.console.source import Source
from nodwyn.console.state import Registry, model_of, title_of
from nodwyn.console.views import event_json, request_json
from nodwyn.errors import NodwynError, NotFoundError
from nodwyn.evals import report, report_table
from nodwyn.log import NO_KNOWN, Known, Store, redact_held
from nodwyn.replay import diagnose_request
from nodwyn.stats import diagnosis_json, row_json, totals_json
from nodwyn.values.model import Prices

STATIC = Path(__file__).parent / "static"
PAGE = 100  # transcript events per page
LIST_BYTES = 10_000_000  # sessions up to this size show their cache rate in the list
POLL_EVENTS = 200  # new events one poll returns at most; beyond that the page reloads its tail
LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "::1", "[::1]"]

_CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'"


class _Headers:
    """Security headers on every response: no inline script, no framing, no sniffing."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def wrapped(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = message.setdefault("headers", [])
                headers.append((b"content-security-policy", _CSP.encode()))
                headers.append((b"x-content-type-options", b"nosniff"))
                headers.append((b"x-frame-options", b"DENY"))
                headers.append((b"cache-control", b"no-store"))
            await send(message)

        await self.app(scope, receive, wrapped)


class _Redact:
    """Every JSON and HTML response cleared of the credentials held now (ADR 0332): a value logged
    before it became a credential is in the log as it was, and the console shows what it reads.
    A body is held until its end (the routes send small pages), then redacted whole."""

    _TYPES = (b"application/json", b"text/html")

    def __init__(self, app: ASGIApp, known: Known) -> None:
        self.app = app
        self.known = known

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.known:
            await self.app(scope, receive, send)
            return
        start: dict[str, Any] | None = None
        body: list[bytes] = []

        async def wrapped(message: Any) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                kind = dict(message.get("headers", [])).get(b"content-type", b"")
                if kind.startswith(self._TYPES):
                    start = message
                    return
            elif message["type"] == "http.response.body" and start is not None:
                body.append(message.get("body", b""))
                if message.get("more_body", False):
                    return
                raw = b"".join(body)
                clean = redact_held(raw.decode("utf-8", "replace"), self.known).encode("utf-8")
                if clean != raw:
                    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
                    headers.append((b"content-length", str(len(clean)).encode()))
                    start = {**start, "headers": headers}
                await send(start)
                await send({"type": "http.response.body", "body": clean, "more_body": False})
                return
            await send(message)

        await self.app(scope, receive, wrapped)


def _int(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise NotFoundError(
            f"query parameter {name}={raw!r} is not an integer; pass a whole number"
        ) from None


def _list_row(source: Source, registry: Registry, sid: str) -> dict[str, Any]:
    """One row of the session list: sessions up to LIST_BYTES are aggregated here (and kept, so
    opening one costs nothing more); larger ones show their title and model from the log's head."""
    info = source.info(sid)
    state = registry.known(sid)
    if state is None and info.error is None and info.size <= LIST_BYTES:
        try:
            state = registry.get(sid)
        except NodwynError as exc:
            info = replace(info, error=str(exc))
    title, model = (state.title, state.model) if state is not None else (None, None)
    if state is None and info.error is None and info.events:
        head = source.read(sid, 1, min(info.events, 50))
        title = next((t for t in map(title_of, head) if t is not None), None)
        model = next((m for m in map(model_of, head) if m is not None), None)
    totals = state.totals().all if state is not None else None
    return {
        "id": sid,
        "start": info.start,
        "last": info.last,
        "events": info.events,
        "size": info.size,
        "title": title,
        "model": model,
        "aggregated": totals is not None,
        "rate": totals.cache_rate if totals is not None else None,
        "requests": totals.requests if totals is not None else None,
        "cost_usd": totals.cost_usd if totals is not None else None,
        "cost_unknown": totals.cost_unknown if totals is not None else None,
        "replies": totals.replies if totals is not None else None,
        "error": info.error,
    }


class _Console:
    """The routes' handlers over one session store and its aggregators."""

    def __init__(self, root: Path, prices: Mapping[str, Prices]) -> None:
        self.source = Source(root)
        self.registry = Registry(self.source, prices)
        self.session_page = (STATIC / "session.html").read_text(encoding="utf-8")
        self.index_page = (STATIC / "index.html").read_text(encoding="utf-8")
        self.error_page = (STATIC / "error.html").read_text(encoding="utf-8")

    def index(self, request: Request) -> Response:
        return HTMLResponse(self.index_page)

    def session(self, request: Request) -> Response:
        sid = request.path_params["sid"]
        self.source.check(sid)  # 404 for an unknown session
        return HTMLResponse(self.session_page.replace("{{SESSION}}", html.escape(sid, quote=True)))

    def eval_page(self, request: Request) -> Response:
        """An eval's table (``nodwyn eval report ID``), computed from the logs when asked."""
        rep = report(Store(self.source.root), request.path_params["eid"])
        body = (
            self.error_page.replace("{{TITLE}}", html.escape(f"eval {rep.eval_id}"))
            .replace('<p id="error-status" class="muted">HTTP {{STATUS}}</p>', "")
            .replace(
                '<p id="error-message">{{MESSAGE}}</p>',
                f'<pre id="eval-table">{html.escape(report_table(rep))}</pre>',
            )
            .replace('class="error-page"', 'class="eval-page"')
        )
        return HTMLResponse(body)

    def eval_json(self, request: Request) -> Response:
        rep = report(Store(self.source.root), request.path_params["eid"])
        return JSONResponse(
            {"eval": rep.eval_id, "runs": [asdict(r) for r in rep.runs], "table": report_table(rep)}
        )

    def sessions(self, request: Request) -> Response:
        """Every session, newest first, with its token cache rate."""
        rows = [_list_row(self.source, self.registry, sid) for sid in self.source.ids()]
        return JSONResponse({"sessions": rows})

    def poll(self, request: Request) -> Response:
        """Totals, request rows and transcript events newer than ``after`` (0: everything but the
        transcript, which starts from its last page)."""
        sid = request.path_params["sid"]
        after = _int(request, "after", 0)
        state = self.registry.get(sid)
        last, totals, rows = state.snapshot(after)
        events: list[dict[str, Any]] = []
        reload = after == 0
        if after and last > after:
            if last - after > POLL_EVENTS:
                reload = True
            else:
                events = [event_json(e) for e in self.source.read(sid, after + 1, last)]
        return JSONResponse(
            {
                "id": sid,
                "title": state.title,
                "model": state.model,
                "last_seq": last,
                "totals": totals_json(totals),
                "rows": [row_json(r) for r in rows],
                "events": events,
                "reload_transcript": reload,
                "reads": state.reads,
            }
        )

    def events(self, request: Request) -> Response:
        """A page of the transcript: up to ``limit`` events before seq ``before`` (default: the tail)."""
        sid = request.path_params["sid"]
        last = self.source.last_seq(sid)
        before = min(_int(request, "before", last + 1), last + 1)
        limit = max(1, min(_int(request, "limit", PAGE), 1000))
        first = max(1, before - limit)
        page = [event_json(e) for e in self.source.read(sid, first, before - 1)] if before > 1 else []
        return JSONResponse({"events": page, "first": first, "last_seq": last})

    def window(self, request: Request) -> Response:
        """Request ``seq`` rebuilt by exact replay, its verification and its cache diagnosis."""
        sid = request.path_params["sid"]
        seq = request.path_params["seq"]
        _, _, rows = self.registry.get(sid).snapshot()
        row = next((r for r in rows if r.seq == seq), None)
        if row is None:
            raise NotFoundError(
                f"seq {seq} of session {sid} is not an llm.req; pick a request from the chart"
            )
        with self.source.private(sid) as log:  # replay on its own reader: polls go on meanwhile
            replayed, diagnosis = diagnose_request(log, row, rows)
        body: dict[str, Any] = {
            "seq": seq,
            "row": row_json(row),
            "verified": replayed.error is None,
            "digest": replayed.digest,
            "error": replayed.error,
            "request": request_json(replayed.request) if replayed.request is not None else None,
            "diagnosis": diagnosis_json(diagnosis),
        }
        return JSONResponse(body)

    def diagnosis(self, request: Request) -> Response:
        """Every request of the session diagnosed (one replay pass; kept until the session grows),
        or with ``after``, only the requests answered since seq ``after`` (each replayed with its
        predecessor), so a live page follows a running session without replaying it all."""
        state = self.registry.get(request.path_params["sid"])
        after = _int(request, "after", 0)
        if after > 0:
            last, fresh = state.diagnoses_after(after)
            return JSONResponse({"last_seq": last, "requests": [diagnosis_json(d) for d in fresh]})
        found = state.diagnoses()
        counts = Counter(d.kind for d in found)
        return JSONResponse(
            {
                "last_seq": state.diagnosed[0] if state.diagnosed else 0,
                "counts": counts,
                "requests": [diagnosis_json(d) for d in found],
            }
        )

    def problem(self, request: Request, status: int, message: str) -> Response:
        """JSON for the page's scripts, a page for a person (an address typed, a link followed)."""
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": message}, status_code=status)
        heading = {404: "Not found", 405: "Not allowed"}.get(status, "Something went wrong")
        body = (
            self.error_page.replace("{{TITLE}}", html.escape(heading))
            .replace("{{STATUS}}", str(status))
            .replace("{{MESSAGE}}", html.escape(message))
        )
        return HTMLResponse(body, status_code=status)

    async def not_found(self, request: Request, exc: Exception) -> Response:
        return self.problem(request, 404, str(exc))

    async def failed(self, request: Request, exc: Exception) -> Response:
        return self.problem(request, 500, str(exc))

    async def http_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            message = f"there is no page at {request.url.path}; the sessions are listed at /"
        elif exc.status_code == 405:
            message = f"{request.method} is not served here: the console is read-only"
        else:
            message = str(exc.detail)
        return self.problem(request, exc.status_code, message)

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/", self.index),
            Route("/s/{sid}", self.session),
            Route("/e/{eid}", self.eval_page),
            Route("/api/e/{eid}", self.eval_json),
            Route("/api/sessions", self.sessions),
            Route("/api/s/{sid}/poll", self.poll),
            Route("/api/s/{sid}/events", self.events),
            Route("/api/s/{sid}/window/{seq:int}", self.window),
            Route("/api/s/{sid}/diagnosis", self.diagnosis),
            Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
        ]


def make_app(
    root: Path,
    prices: Mapping[str, Prices] | None = None,
    *,
    hosts: Sequence[str] = (),
    known: Known = NO_KNOWN,
) -> Starlette:
    """The console over the session store at ``root``; ``prices`` by model entry name.

    Only requests whose Host header names a loopback address or one of ``hosts`` are served,
    whatever the interface: a DNS-rebinding page must never reach it (ADR 0141). Every page and
    JSON route is cleared of ``known``, the credential values held now (ADR 0332)."""
    console = _Console(root, prices or {})
    allowed = [*LOOPBACK_HOSTS, *(h for h in hosts if h not in LOOPBACK_HOSTS and h != "*")]
    return Starlette(
        routes=console.routes(),
        middleware=[
            Middleware(TrustedHostMiddleware, allowed_hosts=allowed),
            Middleware(_Headers),
            Middleware(_Redact, known=known),
        ],
        exception_handlers={
            NotFoundError: console.not_found,
            NodwynError: console.failed,
            HTTPException: console.http_error,
        },
    )
