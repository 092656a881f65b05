"""A provider that hangs, trickles, floods or refuses: every send ends
within the configured deadlines with one clear error, each retry is announced as it happens, and a
reply's size is capped. The fakes are real servers on 127.0.0.1 playing the fault out in time; the
deadlines are short so the whole file runs in seconds."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import pytest

from nodwyn.compose.setup import open_agent
from nodwyn.errors import OriginError, ProviderError, ProviderUnavailable
from nodwyn.fakes import FakeServer
from nodwyn.transport.credentials import Credential, Credentials, origin_of
from nodwyn.transport.http import HttpBackend
from nodwyn.transport.limits import MIB, NetworkLimits
from nodwyn.values.content import TextPart, UserMessage
from nodwyn.values.model import Api, ModelEntry
from nodwyn.values.request import Request, Response

pytestmark = pytest.mark.attack("provider faults")

T = TypeVar("T")
SECRET = "sk-fake-0123456789abcdef"
FAST = NetworkLimits(
    connect_timeout=0.5, idle_timeout=0.6, progress_timeout=1.0, reply_timeout=2.5, max_retries=0
)
SLACK = 1.5  # seconds a busy 2-core machine may add to a deadline


def _request() -> Request:
    return Request(
        system="You are a careful agent.",
        tools=(),
        messages=(UserMessage(parts=(TextPart(text="hello"),)),),
        max_output=100,
    )


def settings_for(url: str, api: Api, **extra: Any) -> ModelEntry:
    return ModelEntry(
        name="fake",
        api=api,
        model="fake-model",
        context_size=200_000,
        base_url=url,
        credential="KEY",
        **extra,
    )


def _backend(url: str, limits: NetworkLimits = FAST, **kw: Any) -> HttpBackend:
    cred = Credential(name="KEY", value=SECRET, origins=frozenset({origin_of(url)}))
    return HttpBackend(Credentials.of([cred]), limits=limits, **kw)


def _within(seconds: float, fn: Callable[[], T]) -> tuple[T | BaseException, float]:
    """Run ``fn`` in a thread; fail the test (instead of hanging it) if it outlives ``seconds``."""
    out: list[T | BaseException] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:
            out.append(exc)

    start = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting after {seconds} s"
    return out[0], time.monotonic() - start


def _send(
    fake: FakeServer, limits: NetworkLimits = FAST, **kw: Any
) -> tuple[Response | BaseException, float]:
    backend = _backend(fake.url, limits, **kw)
    settings = settings_for(fake.url, "openai-chat", family="openrouter")
    try:
        return _within(
            limits.reply_timeout + SLACK, lambda: backend.send(_request(), settings, session_key=None)
        )
    finally:
        backend.close()


def _one_line(exc: object) -> str:
    assert isinstance(exc, ProviderError), exc
    text = str(exc)
    assert "\n" not in text and SECRET not in text
    return text


@pytest.mark.parametrize(
    ("when", "says", "limit"),
    [
        ("accept", "sent nothing for 0.6 s", FAST.idle_timeout),
        ("headers", "sent nothing for 0.6 s", FAST.idle_timeout),
        ("keepalive", "no stream event for 1 s (keep-alives do not count)", FAST.progress_timeout),
        ("drip", "did not finish its reply within 2.5 s", FAST.reply_timeout),
    ],
)
def test_a_hanging_provider_ends_at_its_deadline_with_one_line(when: str, says: str, limit: float) -> None:
    with FakeServer(api="openai-chat", family="openrouter", script=[{"stall": {"when": when}}]) as fake:
        err, took = _send(fake)
        assert len(fake.requests) == 1
    assert isinstance(err, ProviderUnavailable) and says in _one_line(err), err
    assert "config.toml" in str(err) and origin_of(fake.url) in str(err)
    assert limit - 0.1 <= took <= limit + SLACK


def test_keepalives_never_count_as_progress_however_long_they_last() -> None:
    """The comments come every 50 ms, well inside idle_timeout: only the progress deadline stops it."""
    limits = NetworkLimits(idle_timeout=0.5, progress_timeout=1.5, reply_timeout=30, max_retries=0)
    item = {"stall": {"when": "keepalive", "interval": 0.05}}
    with FakeServer(api="openai-chat", family="openrouter", script=[item]) as fake:
        err, took = _send(fake, limits)
    assert "no stream event for 1.5 s" in _one_line(err) and 1.4 <= took <= 1.5 + SLACK


def test_retries_are_announced_as_they_happen_and_stay_inside_the_reply_deadline() -> None:
    shown: list[tuple[float, str]] = []
    start = time.monotonic()
    limits = NetworkLimits(idle_timeout=5, progress_timeout=0.4, reply_timeout=2.0, max_retries=5)
    items = [{"error": {"status": 503, "message": "upstream busy"}}] + [{"stall": {"when": "keepalive"}}] * 6
    with FakeServer(api="openai-chat", family="openrouter", script=items) as fake:
        err, took = _send(
            fake, limits, backoff=0.2, on_retry=lambda line: shown.append((time.monotonic() - start, line))
        )
        attempts = len(fake.requests)
    assert [line for _, line in shown][:2] == [
        "retrying in 0.2 s (2/6): 503 fake: upstream busy",
        "retrying in 0.4 s (3/6): fake: 127.0.0.1:"
        f"{fake.port} sent no stream event for 0.4 s (keep-alives do not count); raise [network] "
        "progress_timeout in config.toml if the model thinks that long",
    ] or shown
    assert shown[0][0] < 0.5  # told before the wait, not after the whole send
    assert attempts == len(shown) + 1 and attempts >= 3
    assert "reply_timeout of 2 s" in _one_line(err) or "within 2 s" in str(err)
    assert took <= limits.reply_timeout + SLACK


def test_a_refused_connection_fails_at_once_without_retries() -> None:
    with FakeServer(api="openai-chat") as fake:
        url = fake.url
    waits: list[float] = []
    shown: list[str] = []
    backend = _backend(url, NetworkLimits(max_retries=4), sleep=waits.append, on_retry=shown.append)
    err, took = _within(
        5, lambda: backend.send(_request(), settings_for(url, "openai-chat"), session_key=None)
    )
    assert "refused the connection" in _one_line(err) and origin_of(url) in str(err)
    assert waits == [] and shown == [] and took < 1


@contextmanager
def _full_backlog() -> Iterator[str]:
    """A listening socket whose accept queue is full, so a new connection is never accepted."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    try:
        for _ in range(8):
            c = socket.socket()
            c.setblocking(False)
            c.connect_ex(("127.0.0.1", port))
            fillers.append(c)
        time.sleep(0.1)
        try:  # a kernel that still completes a handshake here cannot stage the fault
            socket.create_connection(("127.0.0.1", port), timeout=0.3).close()
        except OSError:
            pass
        else:
            pytest.skip("this kernel accepts connections past a full backlog")
        yield f"http://127.0.0.1:{port}"
    finally:
        for c in fillers:
            c.close()
        server.close()


def test_a_server_that_never_accepts_ends_at_the_connect_timeout() -> None:
    limits = NetworkLimits(connect_timeout=0.4, reply_timeout=10, max_retries=0)
    with _full_backlog() as url:
        backend = _backend(url, limits)
        err, took = _within(
            5, lambda: backend.send(_request(), settings_for(url, "openai-chat"), session_key=None)
        )
    assert "did not accept a connection within 0.4 s" in _one_line(err), err
    assert took < 0.4 + SLACK


@pytest.mark.parametrize("line", [False, True], ids=["deltas", "one-line"])
def test_a_flood_is_cut_at_max_reply_bytes_with_one_line(line: bool) -> None:
    limits = NetworkLimits(reply_timeout=20, max_retries=0, max_reply_bytes=2 * MIB)
    item = {"flood": {"bytes": 50 * MIB, "line": line}}
    with FakeServer(api="openai-chat", script=[item]) as fake:
        err, took = _send(fake, limits)
    assert "passed 2 MB and was cut off" in _one_line(err) and "max_reply_mb" in str(err)
    assert took < 10


def test_a_flood_under_the_cap_arrives_whole() -> None:
    limits = NetworkLimits(reply_timeout=20, max_retries=0, max_reply_bytes=8 * MIB)
    with FakeServer(api="openai-chat", script=[{"flood": {"bytes": 3 * MIB + 5, "line": True}}]) as fake:
        reply, _ = _send(fake, limits)
    assert isinstance(reply, Response) and len(reply.text) == 3 * MIB + 5


@contextmanager
def _serving(status: int, headers: dict[str, str], body: bytes) -> Iterator[str]:
    """A loopback server that answers every POST with ``status``, ``headers`` and ``body``."""

    class Answer(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_204_is_reported_as_no_reply_not_as_a_redirect() -> None:
    with _serving(204, {}, b"") as url:
        backend = _backend(url)
        err, _ = _within(
            5, lambda: backend.send(_request(), settings_for(url, "openai-chat"), session_key=None)
        )
    text = _one_line(err)
    assert "HTTP 204 with no reply" in text and "redirect" not in text
    assert isinstance(err, ProviderError) and err.status == 204


def test_negative_usage_is_unknown_not_negative_tokens() -> None:
    usage = {"prompt_tokens": -5000, "completion_tokens": -7, "prompt_tokens_details": {"cached_tokens": -1}}
    chunks = [
        {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": usage},
    ]
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    with _serving(200, {"content-type": "text/event-stream"}, body) as url:
        backend = _backend(url)
        reply, _ = _within(
            5, lambda: backend.send(_request(), settings_for(url, "openai-chat"), session_key=None)
        )
    assert isinstance(reply, Response) and reply.text == "hi"
    u = reply.usage
    assert (u.prompt_tokens, u.cached_tokens, u.output_tokens) == (None, None, None)


def test_an_origin_refusal_leaves_a_note_beside_its_llm_req(tmp_path: Path) -> None:
    """The keychain binds the key to another origin: nothing is sent, and the log says why."""
    keychain = tmp_path / "keychain.json"
    keychain.write_text(
        json.dumps({"credentials": {"KEY": {"value": SECRET, "origins": ["https://elsewhere.example"]}}})
    )
    keychain.chmod(0o600)
    with FakeServer(api="openai-chat", script=[{"text": "never"}]) as fake:
        config = tmp_path / "config.toml"
        config.write_text(
            "[control]\nmodel = 'chat'\n[models.chat]\napi = 'openai-chat'\nmodel = 'fake-model'\n"
            f"base_url = '{fake.url}'\ncontext_size = 32000\ncredential = 'KEY'\n"
        )
        env = {
            "NODWYN_HOME": str(tmp_path / "home"),
            "NODWYN_CONFIG": str(config),
            "NODWYN_KEYCHAIN": str(keychain),
            "HOME": str(tmp_path),
        }
        opened = open_agent(env=env, workspace=tmp_path)
        try:
            with pytest.raises(OriginError):
                opened.agent.user_turn("hello")
            events = list(opened.agent.log.read())
        finally:
            opened.close()
        assert fake.requests == []
    req = next(e for e in events if e.kind == "llm.req")
    notes = [e for e in events if e.kind == "note" and e.seq > req.seq]
    assert notes and f"request seq {req.seq} failed" in notes[0].data["text"]
    assert "elsewhere.example" not in notes[0].data["text"] or "origin" in notes[0].data["text"]
    assert SECRET not in json.dumps([e.data for e in events])


def test_a_run_against_a_hanging_provider_ends_at_its_deadline_in_one_line(tmp_path: Path) -> None:
    """The whole command: [network] deadlines from config.toml, retries shown, one error line."""
    items = [{"stall": {"when": "keepalive"}}] * 3
    with FakeServer(api="openai-chat", family="openrouter", script=items) as fake:
        config = tmp_path / "config.toml"
        config.write_text(
            "[control]\nmodel = 'chat'\n[models.chat]\napi = 'openai-chat'\nfamily = 'openrouter'\n"
            f"model = 'fake-model'\nbase_url = '{fake.url}'\ncontext_size = 32000\n"
            "[network]\nidle_timeout = 1\nprogress_timeout = 0.5\nreply_timeout = 3\nmax_retries = 1\n"
        )
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
            "NODWYN_HOME": str(tmp_path / "home"),
            "NODWYN_CONFIG": str(config),
        }
        start = time.monotonic()
        done = subprocess.run(
            [str(Path(sys.executable).parent / "nodwyn"), "run", "hello"],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
        took = time.monotonic() - start
        assert len(fake.requests) == 2
    assert done.returncode == ProviderError.exit_code and "Traceback" not in done.stderr
    err = done.stderr.strip().splitlines()
    retries = [line for line in err if line.startswith("nodwyn: retrying")]
    assert len(retries) == 1 and retries[0].startswith("nodwyn: retrying in 1 s (2/2): "), err
    assert "no stream event for 0.5 s" in retries[0]
    assert err[-1].startswith("nodwyn: ") and "no stream event for 0.5 s" in err[-1]
    assert took < 3 + 10  # the deadline, plus starting Python twice on a busy machine
