"""A value logged before it became a credential (issue 21, item 10).

The session was written when nothing held the value, so the log has it in clear (that is
correct: redaction redacts what it knows). Later the person makes it a credential (a model entry
names the variable, or the keychain holds it). Every reader re-redacts with the credentials held
now: `log`, `replay` and `export` on a terminal did; `sessions` (also `-q` and `--json`),
`replay --json` (transcript and `--window`), the console's `/api` routes and `export` to a pipe or
with `-o` must too. Each runs as the real `nodwyn` command.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from nodwyn.log import Store
from nodwyn.testing import SessionBuilder, isolated_env, recipe
from nodwyn.transport.credentials import write_keychain

pytestmark = pytest.mark.attack("credentials")

NODWYN = str(Path(sys.executable).parent / "nodwyn")
LATER = "later-cred-Hw83Nq5Zt2Kp"  # no known shape: only a held value redacts it
VAULTED = "vault-later-R7mT2xQ9vLb4"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], str]:
    """A session holding both values in clear, then config.toml naming LATER's variable and a
    keychain holding VAULTED: both are credentials now."""
    tmp = tmp_path_factory.mktemp("readers")
    env = isolated_env(tmp, PATH=os.environ.get("PATH", ""), LATER_KEY=LATER)
    b = SessionBuilder(recipe(), store=Store(Path(env["NODWYN_HOME"]), fsync=False), model="chat")
    b.turn(f"deploy with {LATER} and {VAULTED} please", answer=f"done: {LATER} / {VAULTED}")
    b.close()
    log = (Path(env["NODWYN_HOME"]) / "sessions" / b.id / "log.jsonl").read_text()
    assert LATER in log and VAULTED in log  # logged before either was a credential
    (tmp / "config.toml").write_text(
        "[control]\nmodel = 'chat'\n[models.chat]\napi = 'openai-chat'\nmodel = 'fake-model'\n"
        "base_url = 'http://127.0.0.1:9'\ncredential = 'LATER_KEY'\ncontext_size = 32000\n"
    )
    write_keychain(tmp / "keychain.json", {"vault": {"value": VAULTED, "origins": ["https://example.com"]}})
    return env, b.id


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [NODWYN, *args], env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr
    return done


def _clear(text: str) -> None:
    assert LATER not in text
    assert VAULTED not in text


READERS = [
    ("sessions",),
    ("sessions", "--json"),
    ("sessions", "-q", "deploy"),
    ("sessions", "-q", "deploy", "--json"),
    ("replay", "{sid}", "--json"),
    ("replay", "{sid}"),
    ("log", "{sid}", "--json"),
    ("export", "{sid}"),
    ("export", "{sid}", "--format", "json"),
    ("export", "{sid}", "--format", "otel"),
]


@pytest.mark.parametrize("args", READERS, ids=[" ".join(a) for a in READERS])
def test_reader_to_a_pipe_redacts_with_what_is_held_now(
    home: tuple[dict[str, str], str], args: tuple[str, ...]
) -> None:
    env, sid = home
    done = _run(env, *(a.format(sid=sid) for a in args))
    assert done.stdout.strip()
    _clear(done.stdout + done.stderr)


@pytest.mark.parametrize("fmt", ["md", "json", "otel"])
def test_export_to_a_file_redacts(home: tuple[dict[str, str], str], tmp_path: Path, fmt: str) -> None:
    env, sid = home
    out = tmp_path / f"out.{fmt}"
    _run(env, "export", sid, "--format", fmt, "-o", str(out))
    _clear(out.read_text())


@pytest.mark.parametrize("value", [LATER, VAULTED], ids=["env", "keychain"])
def test_query_cannot_find_a_held_value(home: tuple[dict[str, str], str], value: str) -> None:
    """`sessions -q VALUE` would tell, by the session it lists, what a held value is."""
    env, _ = home
    done = _run(env, "sessions", "-q", value)
    assert "no sessions" in done.stdout


@contextmanager
def _console(env: dict[str, str]) -> Iterator[str]:
    with subprocess.Popen(
        [NODWYN, "console", "--port", "0"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith("nodwyn console on http://"), line
            base = line.split(" on ", 1)[1].split(" ", 1)[0].rstrip("/")
            deadline = time.monotonic() + 10
            while True:
                try:
                    httpx.get(f"{base}/api/sessions", timeout=1)
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
            yield base
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def test_console_routes_redact(home: tuple[dict[str, str], str]) -> None:
    env, sid = home
    with _console(env) as base:
        bodies: dict[str, Any] = {}
        for route in ("/api/sessions", f"/api/s/{sid}/events", f"/api/s/{sid}/poll", f"/s/{sid}", "/"):
            reply = httpx.get(base + route, timeout=10)
            assert reply.status_code == 200, (route, reply.text[:200])
            bodies[route] = reply.text
    for route, text in bodies.items():
        assert LATER not in text, route
        assert VAULTED not in text, route
    assert "[redacted:credential]" in bodies[f"/api/s/{sid}/events"]
