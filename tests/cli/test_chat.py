"""``nodwyn chat`` on a real terminal (a pty): prompt_toolkit's line editing and
history, exact slash commands, a model switch checked when it is made, Ctrl-C in a tool back to
the prompt with the tool's processes gone; and the same commands through a pipe."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from pathlib import Path
from typing import Any, Self

import pytest

from nodwyn.fakes import FakeServer
from nodwyn.log import Store

from .test_habits import chat_bodies, configure, last_user_text
from .test_run import NODWYN, nodwyn

ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


def _own_terminal() -> None:
    """In the child: a session of its own whose controlling terminal is the pty, so Ctrl-C typed
    at it is SIGINT to the command, as in a person's terminal."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """A command on a pseudo-terminal: what it wrote so far, and keys typed at it."""

    def __init__(self, env: dict[str, str], *args: str, columns: int = 200, lines: int = 50) -> None:
        self.leader, follower = pty.openpty()
        size = struct.pack("HHHH", lines, columns, 0, 0)
        fcntl.ioctl(follower, termios.TIOCSWINSZ, size)  # what a full-screen face reads
        try:
            self.proc = subprocess.Popen(
                [*NODWYN, *args],
                env={**env, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": str(lines)},
                cwd=env["WS"],
                stdin=follower,
                stdout=follower,
                stderr=follower,
                preexec_fn=_own_terminal,
            )
        except BaseException:
            os.close(self.leader)
            raise
        finally:
            os.close(follower)
        self.raw = b""
        self.seen = 0  # what expect() has matched up to

    def _pump(self, wait: float) -> None:
        ready, _, _ = select.select([self.leader], [], [], wait)
        if not ready:
            return
        try:
            data = os.read(self.leader, 65536)
        except OSError:
            return
        if b"\x1b[6n" in data:  # prompt_toolkit asks where the cursor is; answer as a terminal does
            os.write(self.leader, b"\x1b[1;1R")
        self.raw += data

    @property
    def text(self) -> str:
        return ANSI.sub(b"", self.raw).decode(errors="replace")

    def expect(self, needle: str, timeout: float = 60) -> None:
        """Wait until ``needle`` appears after what earlier calls matched."""
        end = time.monotonic() + timeout
        while needle not in self.text[self.seen :]:
            if time.monotonic() > end or self.proc.poll() is not None:
                self._pump(0.2)
                shown = self.text[-3000:]
                assert needle in self.text[self.seen :], f"{needle!r} not seen; the terminal shows:\n{shown}"
            self._pump(0.2)
        self.seen += self.text[self.seen :].index(needle) + len(needle)

    def type(self, keys: str) -> None:
        os.write(self.leader, keys.encode())

    def close(self, wait: float = 60) -> int:
        """Read on while the command ends (up to ``wait`` seconds), kill it if it has not, reap it
        and close the pty: nothing of it is left for the garbage collector (ADR 0417). Closing
        again gives the same exit code."""
        if self.leader < 0:
            return self.proc.wait()
        end = time.monotonic() + wait
        while self.proc.poll() is None and time.monotonic() < end:
            self._pump(0.2)
        if self.proc.poll() is None:
            self.proc.kill()
        code = self.proc.wait()
        os.close(self.leader)
        self.leader = -1
        return code

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: object, error: BaseException | None, trace: object) -> None:
        """A test that failed kills the command at once; one that passed closed it already."""
        self.close(wait=60 if error is None else 0)


def _running(marker: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False)
    return found.stdout.split()


def shell(command: str, cid: str) -> dict[str, Any]:
    return {"name": "shell", "id": cid, "arguments": {"command": command}}


@pytest.mark.needs("bwrap")
def test_chat_on_a_terminal(env: dict[str, str]) -> None:
    script: list[dict[str, Any]] = [
        {"calls": [shell("touch sh.started; sleep 300.613", "s1")]},
        {"text": "after the interrupt"},
        {"text": "hello back"},
        {"text": "again back"},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url, 'credential = "OTHER_KEY"\n')
        term = Terminal(env, "chat", "--yes")
        try:
            term.expect("you>")
            term.type("/models\r")
            term.expect("  other")
            assert "* fake" in term.text
            term.type("/modelx\r")
            term.expect("unknown command /modelx; did you mean '/model'?")
            term.type("/model other\r")  # checked now: its credential is not set
            term.expect("needs credential 'OTHER_KEY'")
            term.type("start the server\r")
            started = Path(env["WS"], "sh.started")
            end = time.monotonic() + 60
            while not started.exists() and time.monotonic() < end:
                term._pump(0.1)
            time.sleep(0.3)
            assert _running("300.613"), "the tool's shell did not start"
            term.type("\x03")  # Ctrl-C while the tool runs
            term.expect("interrupted; the log keeps everything so far")
            term.expect("you>")
            end = time.monotonic() + 10
            while _running("300.613") and time.monotonic() < end:  # a sandboxed pid names nothing here
                time.sleep(0.05)
            assert not _running("300.613"), "the tool's shell outlived Ctrl-C"
            term.type("what now?\r")
            term.expect("after the interrupt")
            term.expect("you>")
            term.type("hello there\r")
            term.expect("hello back")
            term.expect("you>")
            term.type("\x1b[A\r")  # Up: the history brings back the last line
            term.expect("again back")
            term.expect("you>")
            time.sleep(0.3)
            term.type("\x04")  # Ctrl-D ends the chat
        finally:
            code = term.close()
        bodies = chat_bodies(fake)
    assert code == 0, term.text[-2000:]
    assert [last_user_text(b).endswith("\n\nhello there") for b in bodies[-2:]] == [True, True]
    assert "hello there" in Path(env["NODWYN_HOME"], "chat-history").read_text()
    (sid,) = Store(Path(env["NODWYN_HOME"])).ids()
    with Store(Path(env["NODWYN_HOME"])).open(sid) as log:
        kinds = [e.kind for e in log.read(1)]
    assert "model.switch" not in kinds  # the refused switch wrote nothing
    assert all(b["model"] == "fake-model" for b in bodies)
    assert re.search(r"\[turn: 1 request, cached \d+%, cost \$\d+\.\d{4}\]", term.text)


def test_chat_slash_commands_through_a_pipe(env: dict[str, str]) -> None:
    with FakeServer(api="openai-chat", script=[{"text": "on other"}, {"text": "unpriced"}]) as fake:
        configure(env, fake.url)
        chat = nodwyn(env, "chat", stdin="/models\n/model s\n/nope\n/model other\nhi\n/help\n/quit\n")
        bodies = chat_bodies(fake)
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout.splitlines()[:4] == ["* fake", "  local", "  local-tiny", "  other"]
    assert "model 's' is not configured" in chat.stderr  # /model s is not /models
    assert "unknown command /nope; commands: /plan, /compact, /model, /models, /help, /quit" in chat.stderr
    assert "[model other]" in chat.stderr and bodies[0]["model"] == "other-model"
    assert "on other" in chat.stdout and "/quit (or /exit, Ctrl-D): end the chat" in chat.stdout
    assert "[turn: 1 request, cached 0%, cost unknown]" in chat.stderr
