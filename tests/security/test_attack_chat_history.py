"""`nodwyn chat`'s line history (issue 21, item 12).

prompt_toolkit saved every typed line in clear to `<NODWYN_HOME>/chat-history`, mode 0644, while
the log redacted them: a credential typed into a line (a held value, or a key of a known shape)
stayed on disk for anyone who can read the file. The history is redacted before it is saved and
the file is 0600; an older history is cleared and made 0600 when a chat opens it. Runs the real
`nodwyn chat` on a pseudo-terminal against a fake provider.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import stat
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from nodwyn.fakes import FakeServer

pytestmark = pytest.mark.attack("credentials")

NODWYN = str(Path(sys.executable).parent / "nodwyn")
VALUE = "corp-llm-cred-Zq81Lm2Xv"  # held: the model entry names its variable
SHAPED = "sk-proj-" + "Ab3dE5gH7jK9mN1pQ3sT5vX7zB9dF1hJ"  # not held, but of a known shape


def _own_terminal() -> None:
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _chat(env: dict[str, str], cwd: Path, lines: list[str]) -> str:
    """Type ``lines`` into `nodwyn chat`, each after the prompt, then Ctrl-D; what it showed."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [NODWYN, "chat", "--yes"],
        env={**env, "TERM": "xterm-256color", "COLUMNS": "200", "LINES": "50"},
        cwd=cwd,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        preexec_fn=_own_terminal,
    )
    os.close(follower)
    raw = b""

    def pump(until: bytes, seen: int) -> int:
        nonlocal raw
        end = time.monotonic() + 60
        while raw.count(until) < seen:
            assert time.monotonic() < end and proc.poll() is None, raw[-2000:]
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    data = os.read(leader, 65536)
                except OSError:
                    break
                if b"\x1b[6n" in data:
                    os.write(leader, b"\x1b[1;1R")
                raw += data
        return seen

    try:
        for n, line in enumerate(lines, 1):
            pump(b"you>", n)
            os.write(leader, line.encode() + b"\r")
        pump(b"you>", len(lines) + 1)
        os.write(leader, b"\x04")
        end = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < end:  # read on, or its writes block
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    raw += os.read(leader, 65536)
                except OSError:
                    break
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)
    return raw.decode(errors="replace")


@pytest.mark.needs("bwrap")
@pytest.mark.parametrize("old_history", [False, True], ids=["new-history", "old-clear-0644-history"])
def test_typed_credentials_are_not_kept_in_clear(
    tmp_path: Path, person: Callable[..., dict[str, str]], old_history: bool
) -> None:
    with FakeServer(api="openai-chat", script=[{"text": "noted"}, {"text": "noted again"}]) as fake:
        env = {
            **person(tmp_path, fake.url, credential=("CORP_LLM", VALUE)),
            "PATH": os.environ.get("PATH", ""),
        }
        history = Path(env["NODWYN_HOME"]) / "chat-history"
        if old_history:
            history.parent.mkdir(parents=True)
            history.write_text(f"\n# 2026-11-30 10:00:00\n+use {VALUE} for the deploy\n")
            history.chmod(0o644)
        _chat(env, tmp_path / "ws", [f"the key is {VALUE} ok", f"and OPENAI_API_KEY={SHAPED}"])
    saved = history.read_text()
    assert "the key is" in saved and "OPENAI_API_KEY=" in saved  # the lines were saved
    assert VALUE not in saved
    assert SHAPED not in saved
    assert "[redacted:credential]" in saved
    assert stat.S_IMODE(history.stat().st_mode) == 0o600
