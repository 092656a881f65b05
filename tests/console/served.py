"""The console served from this process on 127.0.0.1, and how Debian's chromium is launched: shared
by the console's tests and the console benchmarks."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("NODWYN_TEST_CHROMIUM", "/usr/bin/chromium")  # Debian's; the env for a test
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class Served:
    def __init__(self, url: str, server: Any, thread: threading.Thread) -> None:
        self.url = url
        self.server = server
        self.thread = thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def serve(root: Path, prices: Any = None) -> Served:
    """The console over the data root ``root`` on a port the system picks, served from a thread."""
    import uvicorn

    from nodwyn.console.app import make_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(make_app(root, prices), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"the console on 127.0.0.1:{port} did not start within 10 s; see its log above"
            )
        time.sleep(0.02)
    return Served(f"http://127.0.0.1:{port}", server, thread)
