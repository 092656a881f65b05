"""A reply streams as it comes (issue 26, item 5): ``nodwyn chat`` on a pty, against a fake that
sends its reply slowly, shows the text before the reply has ended, and a key split across two
of the stream's chunks is never shown unredacted (ADR 0430)."""

from __future__ import annotations

import time
from pathlib import Path

from nodwyn.fakes import FakeServer
from nodwyn.log import Store

from .test_chat import Terminal
from .test_habits import configure

KEY = "sk-ant-api03-" + "Zq7" * 12 + "Wx"
PAUSE = 2.0  # seconds between the chunks of the reply


def _thirds(text: str) -> list[str]:
    """How the fake cuts a reply's text into its stream chunks (fakes.base.split_text)."""
    size = -(-len(text) // 3)
    return [text[i : i + size] for i in range(0, len(text), size)]


def test_chat_streams_a_slow_reply_and_never_shows_a_split_key(env: dict[str, str]) -> None:
    text = f"The first words stream right away and here comes the key {KEY} then the closing words end it."
    chunks = _thirds(text)
    assert KEY not in chunks[0] and KEY not in chunks[1] and KEY[:12] in chunks[0] + chunks[1]
    assert not any(KEY in c for c in chunks)  # the key is split across chunks
    script = [{"text": text, "stall": {"when": "pace", "interval": PAUSE}}]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        term = Terminal(env, "chat")
        try:
            term.expect("you>")
            term.type("go\r")
            term.expect("The first words stream")
            early = term.text
            asked = time.monotonic()
            term.expect("closing words end it.")
            waited = time.monotonic() - asked
            term.expect("you>")
            term.type("\x04")
        finally:
            code = term.close()
    assert code == 0, term.text[-2000:]
    # the first chunk was on the screen while the reply still had two pauses to go
    assert "end it." not in early and waited > PAUSE, (waited, early[-500:])
    assert KEY not in term.text and KEY[13:25] not in term.text
    assert "[redacted:anthropic-key]" in term.text
    (sid,) = Store(Path(env["NODWYN_HOME"])).ids()
    with Store(Path(env["NODWYN_HOME"])).open(sid) as log:
        replies = [e.data for e in log.read(1) if e.kind == "llm.resp"]
    assert replies and KEY not in str(replies)  # the log has it redacted too
