"""The command: `nodwyn` alone on a terminal opens the TUI (a real pty, a real process), a turn
goes to the fake and Ctrl+Q leaves; without a terminal `nodwyn` prints its usage as before and `nodwyn tui`
refuses in one line."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.cli.test_chat import Terminal  # (the pty the chat tests drive)
from tests.cli.test_habits import chat_bodies, configure
from tests.cli.test_run import NODWYN

from nodwyn.fakes import FakeServer
from nodwyn.log import Store


def test_nodwyn_alone_on_a_terminal_opens_the_tui(env: dict[str, str]) -> None:
    with FakeServer(api="openai-chat", script=[{"text": "Hello from the fake."}]) as fake:
        configure(env, fake.url)
        with Terminal(env) as term:
            term.expect("ready", timeout=60)
            term.type("hi there\r")
            term.expect("Hello from the fake.", timeout=60)
            term.type("\x11")  # Ctrl+Q
            code = term.close()
        bodies = chat_bodies(fake)
    assert code == 0
    assert len(bodies) == 1 and bodies[0]["messages"][-1]["content"].endswith("hi there")
    (sid,) = Store(Path(env["NODWYN_HOME"])).ids()
    with Store(Path(env["NODWYN_HOME"])).open(sid) as log:
        assert [e.kind for e in log.read(1)][-2:] == ["llm.req", "llm.resp"]


def test_without_a_terminal_nodwyn_prints_help_and_tui_refuses(env: dict[str, str]) -> None:
    alone = subprocess.run(
        NODWYN, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60
    )
    assert alone.returncode == 2 and "Commands" in alone.stderr  # as before: the usage, no TUI
    assert "  tui " in alone.stderr
    tui = subprocess.run(
        [*NODWYN, "tui"], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60
    )
    assert tui.returncode == 2
    assert tui.stderr.startswith("nodwyn: nodwyn tui needs a terminal") and len(tui.stderr.splitlines()) == 1


def test_on_a_terminal_the_pickers_open_at_once_and_an_unpriced_cost_is_unknown(env: dict[str, str]) -> None:
    """Issue 26, item 7: Ctrl+R, Ctrl+O and /resume draw their picker with no further key, the search
    empty (its placeholder shows); Esc closes it; Esc and Ctrl+O typed together (read as one key,
    the Esc lost, on a busy terminal: ADR 0433) still give the model picker; a model without prices
    shows "cost unknown", never $0.0000. Each step waits for what the screen shows, never for time."""
    with FakeServer(api="openai-chat", script=[]) as fake:
        configure(env, fake.url)
        config = Path(env["NODWYN_CONFIG"])
        config.write_text(config.read_text().replace('model = "fake"', 'model = "other"', 1))
        with FullScreen(env, "tui", columns=140) as term:
            term.expect("ready", timeout=60)
            assert "cost unknown" in term.text and "$0.0000" not in term.text
            opens = (("\x12", "Resume a session"), ("\x0f", "Switch model"), ("/resume\r", "Resume a"))
            for keys, title in opens:
                term.type(keys)
                term.until(showing(title), title)  # no other key press
                if title.startswith("Resume"):
                    term.until(_search_empty, "the search empty (its placeholder)")
                term.type("\x1b")
                term.until(showing(title, not_=True), f"{title} closed")
            term.type("\x12")
            term.until(showing("Resume a session"), "the resume picker")
            term.type("\x1b\x0f")  # Esc, Ctrl+O at once: Textual reads Alt+Ctrl+O, the Esc lost
            term.until(showing("Resume a session", not_=True), "the resume picker closed")
            term.until(showing("Switch model"), "the model picker in its place")
            term.type("\x1b")
            term.until(showing("Switch model", not_=True), "the model picker closed")
            term.type("\x11")  # Ctrl+Q
            code = term.close()
    assert code == 0, term.text[-2000:]


def showing(text: str, not_: bool = False) -> Callable[[list[str]], bool]:
    """A row of the screen shows ``text`` (with ``not_``: none does)."""
    return lambda rows: any(text in row for row in rows) != not_


def _search_empty(rows: list[str]) -> bool:
    search = [row for row in rows if "search first message" in row]
    return bool(search) and "/resume" not in search[0]


# one token of what Textual writes: a CSI sequence (its numbers, its final byte), an OSC string, another
# escape, CR, LF, or a run of text; an escape not yet whole matches nothing and waits for more bytes
TOKEN = re.compile(rb"\x1b\[([0-9;?<>=]*)[ -/]*([@-~])|\x1b\][^\x07]*\x07|\x1b[^\[\]]|\r|\n|[^\x1b\r\n]+")


class FullScreen(Terminal):
    """A full-screen app (Textual) on the pty, and what its screen shows now: Textual writes text,
    SGR colours, absolute cursor moves (CSI row;col H), CR and LF, and modes this model ignores."""

    def __init__(self, env: dict[str, str], *args: str, columns: int = 140, lines: int = 50) -> None:
        super().__init__(env, *args, columns=columns, lines=lines)
        self.columns, self.lines = columns, lines
        self.grid = [[" "] * columns for _ in range(lines)]
        self.cursor = (0, 0)
        self.parsed = 0  # how much of ``raw`` the grid holds

    def rows(self) -> list[str]:
        row, col = self.cursor
        while (m := TOKEN.match(self.raw, self.parsed)) is not None:
            token = m.group(0)
            if not token.startswith((b"\x1b", b"\r", b"\n")):
                try:
                    text = token.decode()
                except UnicodeDecodeError as e:
                    if m.end() < len(self.raw):  # not UTF-8
                        text = token.decode(errors="replace")
                    elif e.start == 0:  # a character cut by the read: wait for its rest
                        break
                    else:
                        token = token[: e.start]
                        text = token.decode()
                for ch in text:
                    if 0 <= row < self.lines and 0 <= col < self.columns:
                        self.grid[row][col] = ch
                    col += 1
                self.parsed += len(token)
                continue
            if m.group(2) == b"H":
                numbers = [int(n) if n else 1 for n in m.group(1).split(b";")] + [1]
                row, col = numbers[0] - 1, numbers[1] - 1
            elif token == b"\r":
                col = 0
            elif token == b"\n":
                row += 1
            self.parsed = m.end()
        self.cursor = (row, col)
        return ["".join(r) for r in self.grid]

    def until(self, shows: Callable[[list[str]], bool], what: str, timeout: float = 30) -> None:
        """Wait until the screen ``shows`` what is wanted (``what`` names it in the failure)."""
        end = time.monotonic() + timeout
        while not shows(self.rows()):
            if time.monotonic() > end or self.proc.poll() is not None:
                screen = "\n".join(self.rows())
                raise AssertionError(f"the screen never showed {what}; it shows:\n{screen}")
            self._pump(0.1)
