"""Ctrl-C mid-reply in ``nodwyn chat`` on a pty (issue 26, item 6): the partial reply is logged as
interrupted, and what was held back of it is not shown at the start of the next turn."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from nodwyn.fakes import FakeServer
from nodwyn.log import Store

from .test_chat import Terminal
from .test_habits import chat_bodies, configure


def test_ctrl_c_mid_reply_logs_it_and_shows_no_stale_fragment(env: dict[str, str]) -> None:
    script: list[dict[str, Any]] = [
        {"text": "Partial answer", "stall": {"when": "drip", "interval": 0.2}},  # never ends
        {"text": "Second reply."},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        term = Terminal(env, "chat")
        try:
            term.expect("you>")
            term.type("tell me\r")
            end = time.monotonic() + 60
            while not chat_bodies(fake) and time.monotonic() < end:
                term._pump(0.1)
            time.sleep(1.5)  # the reply is streaming: its text and a few dripped deltas are here
            term.type("\x03")
            term.expect("interrupted; the log keeps everything so far")
            term.expect("you>")
            after = len(term.text)
            term.type("next\r")
            term.expect("Second reply.")
            term.expect("you>")
            term.type("\x04")
        finally:
            code = term.close()
        bodies = chat_bodies(fake)
    assert code == 0, term.text[-2000:]
    assert "Partial" not in term.text[after:]  # the held-back fragment was dropped, not flushed
    (sid,) = Store(Path(env["NODWYN_HOME"])).ids()
    with Store(Path(env["NODWYN_HOME"])).open(sid) as log:
        notes = [e.data["text"] for e in log.read(1) if e.kind == "note"]
    interrupted = [n for n in notes if n.startswith("reply interrupted by the person; its text so far: ")]
    assert len(interrupted) == 1 and interrupted[0].split("so far: ", 1)[1].startswith("Partial answer.")
    assert len(bodies) == 2
