"""The console as a DNS-rebinding page or a careless flag would reach it: the
Host check holds whatever the bind address and flags, and a taken port is one line, exit 2, with
no URL printed. The real ``nodwyn console`` command, in a subprocess, on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from nodwyn.errors import ConfigError

pytestmark = pytest.mark.attack("console")

NODWYN = str(Path(sys.executable).parent / "nodwyn")


@contextmanager
def _console(tmp_path: Path, *args: str) -> Iterator[str]:
    """``nodwyn console ARGS --port 0``; yields the port it printed, stops it after."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "NODWYN_HOME": str(tmp_path / "home")}
    with subprocess.Popen(
        [NODWYN, "console", "--port", "0", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith("nodwyn console on http://"), (line, proc.stderr and proc.stderr.read())
            port = line.split("]:" if "[" in line else ":", 2)[-1].split("/", 1)[0]
            deadline = time.monotonic() + 10
            while True:  # the URL is printed before uvicorn starts serving the bound socket
                try:
                    httpx.get(f"http://127.0.0.1:{port}/api/sessions", timeout=1)
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "the console did not answer"
                    time.sleep(0.05)
            yield port
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def _status(port: str, host: str) -> int:
    return httpx.get(f"http://127.0.0.1:{port}/api/sessions", headers={"Host": host}, timeout=5).status_code


REBINDING = ["evil.example", "evil.example:80", "127.0.0.1.evil.example", "localhost.evil.example"]


@pytest.mark.parametrize(
    "args",
    [
        ("--host", "127.0.0.1"),
        ("--host", "127.0.0.1", "--allow-remote"),
        ("--host", "0.0.0.0", "--allow-remote"),
        ("--host", "0.0.0.0", "--allow-remote", "--allow-host", "console.lan"),
    ],
    ids=["loopback", "loopback-allow-remote", "wildcard", "wildcard-named"],
)
def test_the_host_check_holds_whatever_the_bind_address(tmp_path: Path, args: tuple[str, ...]) -> None:
    with _console(tmp_path, *args) as port:
        assert [_status(port, h) for h in REBINDING] == [400] * len(REBINDING)
        assert _status(port, f"127.0.0.1:{port}") == 200 and _status(port, f"localhost:{port}") == 200
        if "console.lan" in args:
            assert _status(port, f"console.lan:{port}") == 200


def test_a_taken_port_is_one_line_exit_2_and_no_url(tmp_path: Path) -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "NODWYN_HOME": str(tmp_path / "h")}
        done = subprocess.run(
            [NODWYN, "console", "--port", str(port)], env=env, capture_output=True, text=True, timeout=60
        )
    finally:
        holder.close()
    assert done.returncode == ConfigError.exit_code and done.returncode != 3
    assert done.stdout == "" and "http://" not in done.stderr
    assert done.stderr.count("\n") == 1 and f"port {port}" in done.stderr and "in use" in done.stderr
