"""Careless or hostile command-line inputs: each ends in one line on stderr
and an exit code that says what happened, never a traceback or a silent 0. The real ``nodwyn``
command in a subprocess, against fakes on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from nodwyn.errors import ConfigError, CorruptLogError, ProviderError
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.values.events import Note

pytestmark = pytest.mark.attack("CLI inputs")

NODWYN = str(Path(sys.executable).parent / "nodwyn")


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "NODWYN_HOME": str(tmp_path / "home"),
        "NODWYN_CONFIG": str(tmp_path / "config.toml"),
    }


def _nodwyn(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([NODWYN, *args], env=env, capture_output=True, text=True, timeout=timeout)


def _one_line(done: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert all(w in done.stderr for w in words), done.stderr


@pytest.mark.parametrize(
    "content", [b"\xff\xfe\x00\x01binary", b"\x89PNG\r\n\x1a\n\x00\x00"], ids=["utf16-bom", "png"]
)
def test_fake_serve_with_a_binary_script(tmp_path: Path, content: bytes) -> None:
    script = tmp_path / "script.jsonl"
    script.write_bytes(content)
    done = _nodwyn(_env(tmp_path), "fake", "serve", "--api", "openai-chat", "--script", str(script))
    _one_line(done, ConfigError.exit_code, "not UTF-8", str(script))


def test_fake_serve_on_a_port_in_use(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text('{"text": "hi"}\n')
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        done = _nodwyn(
            _env(tmp_path),
            "fake",
            "serve",
            "--api",
            "openai-chat",
            "--script",
            str(script),
            "--port",
            str(port),
        )
    finally:
        holder.close()
    _one_line(done, ConfigError.exit_code, f"127.0.0.1:{port}", "--port")
    assert done.stdout == ""


def test_the_transcript_of_a_log_with_a_seq_gap_warns_and_fails(tmp_path: Path) -> None:
    store = Store(tmp_path / "home")
    log = store.create()
    for n in range(5):
        log.append(Note(text=f"note {n}"))
    log.close()
    path = store.sessions / log.id / "log.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2] + lines[3:]))  # seq 3 cut out of the middle
    (store.sessions / log.id / "index.bin").unlink()
    done = _nodwyn(_env(tmp_path), "replay", log.id)
    assert done.returncode == CorruptLogError.exit_code and "Traceback" not in done.stderr
    assert "seq 4 follows seq 2" in done.stderr and done.stderr.count("\n") == 1
    assert "note 0" in done.stdout and "note 4" in done.stdout  # still shown, gap and all


def test_models_test_fails_when_the_provider_refuses(tmp_path: Path) -> None:
    env = _env(tmp_path)
    with FakeServer(api="openai-chat", api_key="right-key") as fake:
        Path(env["NODWYN_CONFIG"]).write_text(
            "[models.chat]\napi = 'openai-chat'\nmodel = 'fake-model'\n"
            f"base_url = '{fake.url}'\ncontext_size = 32000\ncredential = 'CHAT_KEY'\n"
        )
        done = _nodwyn({**env, "CHAT_KEY": "wrong-key"}, "models", "test", "chat")
    assert done.returncode == ProviderError.exit_code, (done.returncode, done.stdout, done.stderr)
    assert "refused" in done.stdout and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "refused request 1" in done.stderr
    assert "wrong-key" not in done.stdout + done.stderr
