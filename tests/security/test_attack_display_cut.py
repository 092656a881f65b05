"""The 16 KiB display cut (issue 21, item 13).

A streamed line with no end is let out once it passes 16 KiB, all but its last 4 KiB. If the cut
falls inside a held credential, neither half matches the redaction and, written one after the
other, the whole value reaches the terminal. The line is redacted before it is cut.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nodwyn.cli import screen
from nodwyn.fakes import FakeServer
from nodwyn.log.redact import Known

pytestmark = pytest.mark.attack("terminal output")

NODWYN = str(Path(sys.executable).parent / "nodwyn")
VALUE = "corp-llm-cred-Zq81Lm2Xv"
FRAGMENT = 20_000  # the fake streams a text in three fragments: 60,000 characters, 20,000 each
FIRST_CUT = FRAGMENT - 4096  # where the first let-out cuts a line with no blank


def test_reasoning_cut_inside_a_held_value(tmp_path: Path, person: Callable[..., dict[str, str]]) -> None:
    """The issue's run: the model's reasoning, one line of 60,000 characters, with the held value
    where the first cut falls; stderr shows the reasoning as it streams."""
    for offset in (4, 11):
        thinking = "a" * (FIRST_CUT - offset) + VALUE
        thinking += "b" * (3 * FRAGMENT - len(thinking))
        with FakeServer(api="openai-chat", script=[{"thinking": thinking, "text": "ok"}]) as fake:
            env = {
                **person(tmp_path, fake.url, credential=("CORP_LLM", VALUE)),
                "PATH": os.environ.get("PATH", ""),
            }
            done = subprocess.run(
                [NODWYN, "run", "think hard", "--yes"],
                env=env,
                cwd=tmp_path / "ws",
                capture_output=True,
                text=True,
                timeout=120,
                stdin=subprocess.DEVNULL,
            )
        assert done.returncode == 0, done.stderr[-2000:]
        assert "a" * 1000 in done.stderr  # the reasoning was shown
        assert VALUE not in done.stderr
        assert VALUE not in done.stderr.replace("\n", "")
        assert "[redacted:credential]" in done.stderr


@pytest.fixture
def held() -> Iterator[None]:
    before = screen.held()
    screen.hold(Known.of([VALUE]))
    yield
    screen.hold(before)


@pytest.mark.usefixtures("held")
@pytest.mark.parametrize("at", [1, 5, 12, len(VALUE) - 1])
@pytest.mark.parametrize("blank", [False, True], ids=["no-blank", "blank-before"])
def test_stream_cut_at_every_position(at: int, blank: bool) -> None:
    """Screen.Stream itself, the cut placed at several positions inside the value."""
    head = "x" * (16_501 - 4096 - at)  # the first let-out cuts at 16,501 - 4,096: ``at`` into the value
    if blank:
        head = "x" + " " + head[2:]  # a blank far before: the cut moves back to it
    text = head + VALUE + "y" * 8000
    stream = screen.Stream()
    out = stream.feed(text[:16_501]) + stream.feed(text[16_501:]) + stream.flush()
    assert VALUE not in out
    assert "[redacted:credential]" in out
