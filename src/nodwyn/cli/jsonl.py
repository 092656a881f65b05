"""``--jsonl``: a run as JSON Lines on stdout while it happens (issue 26, item 1; ADR 0380).

One object a line, each with a ``type``; the schema is ``docs/jsonl.schema.json`` (version
``JSONL_VERSION``, on the ``session`` line), described in ``docs/jsonl.md``. Text the model or a tool
wrote goes through ``screen.Stream`` / ``screen.shown`` as on the screen (credentials redacted), and
tool arguments and results are cut to ``SHOWN`` characters: the log holds them whole. stderr stays
for people: the notices are written there too.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Final

import click
import orjson

from nodwyn.agent import Outcome
from nodwyn.cli.screen import Stream, redacted, shown
from nodwyn.values.content import ToolCall
from nodwyn.values.events import Event, LlmReq
from nodwyn.values.request import Response

JSONL_VERSION: Final = 1
SHOWN: Final = 2000  # characters of a tool call's arguments or result on its line


def emit(doc: dict[str, Any]) -> None:
    """One line on stdout, flushed so a reader sees it as it happens."""
    click.echo(orjson.dumps(doc).decode())
    sys.stdout.flush()


def cut(text: str) -> tuple[str, bool]:
    """``text`` redacted (before the cut: half a key is still a key) and cut to ``SHOWN``."""
    text = redacted(text)  # JSON escapes control characters itself
    return (text, False) if len(text) <= SHOWN else (text[:SHOWN] + "…", True)


class JsonLines:
    """A ``Display`` (agent.ports) writing one JSON object per thing that happens."""

    def __init__(self) -> None:
        self._streams: dict[str, Stream] = {}
        self._reply_seq: int | None = None  # the llm.resp whose calls are being answered
        self.last_seq: Callable[[], int] = lambda: 0  # the log's last seq, once the agent exists

    def session(self, **fields: Any) -> None:
        emit({"type": "session", "version": JSONL_VERSION, **fields})

    def _flush(self, but: str | None = None) -> None:
        for kind in [k for k in self._streams if k != but]:
            self._delta(kind, self._streams.pop(kind).flush())

    def _delta(self, kind: str, text: str) -> None:
        if text:
            emit({"type": "delta", "kind": kind, "text": text})

    def delta(self, kind: str, fragment: str) -> None:
        self._flush(but=kind)
        self._delta(kind, self._streams.setdefault(kind, Stream()).feed(fragment))

    def request(self, event: Event) -> None:
        self._flush()
        req = LlmReq.from_data(event.data)
        emit({"type": "request", "seq": event.seq, "ctx": event.ctx, "estimate": req.estimate})

    def response(self, event: Event, response: Response) -> None:
        self._flush()
        self._reply_seq = event.seq
        u = response.usage
        emit(
            {
                "type": "reply",
                "seq": event.seq,
                "ctx": event.ctx,
                "finish": response.finish,
                "calls": len(response.calls),
                "tokens": {"prompt": u.prompt_tokens, "cached": u.cached_tokens, "output": u.output_tokens},
            }
        )

    def tool_call(self, ctx: str, call: ToolCall) -> None:
        self._flush()
        args, truncated = cut(call.arguments)
        emit(
            {
                "type": "tool_call",
                "seq": self._reply_seq,  # the reply that made the call
                "ctx": ctx,
                "id": call.id,
                "name": redacted(call.name),
                "arguments": args,
                "truncated": truncated,
            }
        )

    def tool_result(self, ctx: str, call: ToolCall, outcome: Outcome) -> None:
        text, truncated = cut(outcome.text)
        emit(
            {
                "type": "tool_result",
                "seq": self.last_seq(),  # the tool.result just logged
                "ctx": ctx,
                "id": call.id,
                "name": redacted(call.name),
                "error": outcome.error,
                "text": text,
                "truncated": truncated,
            }
        )

    def notice(self, text: str) -> None:
        self._flush()
        emit({"type": "note", "text": redacted(text)})
        click.secho(f"nodwyn: {shown(text)}", err=True, fg="yellow")

    def answer(self, result: object) -> None:
        """After a turn: the rest of the reply; the answer itself is on the ``result`` line."""
        self._flush()

    def result(self, doc: dict[str, Any]) -> None:
        """The last line: the object ``--json`` prints, typed."""
        self._flush()
        emit({"type": "result", **doc})
