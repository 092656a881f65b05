"""A hostile OTLP collector (issue 21, items 14 and 15).

`nodwyn export --format otel --otlp-endpoint URL` posts spans to a collector the person named. A
collector that answers with a huge body must not be read whole; one that drips its reply (or its
headers) a byte at a time must not hold the export past its one overall deadline; and the URL's
password is never printed, on success or failure.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nodwyn.errors import ExportError
from nodwyn.export.send import post_otlp
from nodwyn.log import Store
from nodwyn.testing import SessionBuilder, isolated_env, recipe

pytestmark = pytest.mark.attack("OTLP collector")

NODWYN = str(Path(sys.executable).parent / "nodwyn")


class Collector:
    """A raw TCP server on 127.0.0.1 that answers each connection with ``answer(conn)``."""

    def __init__(self, answer: Callable[[socket.socket], None]) -> None:
        self.answer = answer
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.sent = 0
        self.bodies: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            fields = [line.split(b":", 1) for line in head.split(b"\r\n")[1:]]
            length = next((int(v) for k, v in fields if k.strip().lower() == b"content-length"), 0)
            while len(rest) < length:
                rest += conn.recv(65536)
            self.bodies.append(rest)
            with contextlib.suppress(OSError):  # the client hung up: what the test wants
                self.answer(conn)

    def close(self) -> None:
        self._stop.set()
        self.sock.close()


@pytest.fixture
def collector() -> Iterator[Callable[[Callable[[socket.socket], None]], Collector]]:
    made: list[Collector] = []

    def make(answer: Callable[[socket.socket], None]) -> Collector:
        made.append(Collector(answer))
        return made[-1]

    yield make
    for c in made:
        c.close()


def _flood(status: int, owner: list[Collector]) -> Callable[[socket.socket], None]:
    def answer(conn: socket.socket) -> None:
        conn.sendall(f"HTTP/1.1 {status} X\r\nContent-Length: {1 << 30}\r\n\r\n".encode())
        block = b"e" * 65536
        while owner[0].sent < 1 << 30:
            conn.sendall(block)
            owner[0].sent += len(block)

    return answer


@pytest.mark.parametrize("status", [500, 200])
def test_huge_reply_is_not_read_whole(
    status: int, collector: Callable[[Callable[[socket.socket], None]], Collector]
) -> None:
    owner: list[Collector] = []
    owner.append(collector(_flood(status, owner)))
    start = time.monotonic()
    if status == 500:
        with pytest.raises(ExportError, match="HTTP 500"):
            post_otlp(f"http://127.0.0.1:{owner[0].port}", b"x", "json", timeout=20)
    else:
        post_otlp(f"http://127.0.0.1:{owner[0].port}", b"x", "json", timeout=20)
    assert time.monotonic() - start < 10
    time.sleep(0.3)
    assert owner[0].sent < 64 << 20  # the client stopped reading long before the gigabyte


def _drip_body(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
    for _ in range(1000):
        conn.sendall(b"x")
        time.sleep(0.25)


def _drip_headers(conn: socket.socket) -> None:
    for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 1000:
        conn.sendall(bytes([byte]))
        time.sleep(0.25)


@pytest.mark.parametrize("answer", [_drip_body, _drip_headers], ids=["body", "headers"])
def test_dripping_collector_meets_one_deadline(
    answer: Callable[[socket.socket], None], collector: Callable[[Callable[[socket.socket], None]], Collector]
) -> None:
    c = collector(answer)
    start = time.monotonic()
    with pytest.raises(ExportError, match="within 2 s"):
        post_otlp(f"http://127.0.0.1:{c.port}", b"x", "json", timeout=2)
    assert time.monotonic() - start < 3.5


def _session(tmp_path: Path) -> tuple[dict[str, str], str]:
    env = isolated_env(tmp_path, PATH=os.environ.get("PATH", ""))
    b = SessionBuilder(recipe(), store=Store(Path(env["NODWYN_HOME"]), fsync=False))
    b.user("hello")
    b.close()
    return env, b.id


def _ok(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")


def _unauthorised(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 4\r\n\r\nnope")


@pytest.mark.parametrize("answer", [_ok, _unauthorised], ids=["sent", "refused"])
def test_endpoint_password_is_never_printed(
    tmp_path: Path,
    answer: Callable[[socket.socket], None],
    collector: Callable[[Callable[[socket.socket], None]], Collector],
) -> None:
    env, sid = _session(tmp_path)
    c = collector(answer)
    done = subprocess.run(
        [
            NODWYN,
            "export",
            sid,
            "--format",
            "otel",
            "--otlp-endpoint",
            f"http://user:s3cr3tPW@127.0.0.1:{c.port}",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == (0 if answer is _ok else 16), done.stderr
    assert f"127.0.0.1:{c.port}" in done.stderr
    assert "s3cr3tPW" not in done.stderr + done.stdout
    assert c.bodies  # it was sent, with the password as Basic auth


def test_unreachable_endpoint_password_is_never_printed(tmp_path: Path) -> None:
    env, sid = _session(tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens once closed
    done = subprocess.run(
        [
            NODWYN,
            "export",
            sid,
            "--format",
            "otel",
            "--otlp-endpoint",
            f"http://user:s3cr3tPW@127.0.0.1:{port}",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 16
    assert "s3cr3tPW" not in done.stderr
