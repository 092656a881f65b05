"""One event, one line: ``{"seq":N,"t":"...Z","kind":"...","ctx":"...","data":{...}}`` + ``\\n``.

orjson writes the keys in that order, so every line starts with ``{"seq":N,``; the index checks
that prefix to confirm an offset without parsing the line. JSON strings escape newlines, so a line
never holds a raw ``\\n`` before its end (docs/adr/0003-log-format.md).
"""

from __future__ import annotations

import functools
import re
from typing import Any, Final

import orjson

from nodwyn.errors import CorruptLogError
from nodwyn.values.events import Event

ENVELOPE: Final = ("seq", "t", "kind", "ctx", "data")
KIND: Final = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)*")  # dotted lowercase, e.g. llm.req
CTX_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")  # what a context id may be
FIX: Final = (
    "the log is damaged; copy the session folder and cut log.jsonl before that line to keep what precedes it"
)


def encode_line(seq: int, t: str, kind: str, ctx: str, data: dict[str, Any]) -> bytes:
    """The line's bytes, newline included. Raises TypeError for data that is not JSON."""
    return orjson.dumps(
        {"seq": seq, "t": t, "kind": kind, "ctx": ctx, "data": data}, option=orjson.OPT_APPEND_NEWLINE
    )


def encode_event(event: Event) -> bytes:
    return encode_line(event.seq, event.t, event.kind, event.ctx, event.data)


def seq_prefix(seq: int) -> bytes:
    return b'{"seq":%d,' % seq


@functools.lru_cache(maxsize=1024)
def _writable(kind: str, ctx: str) -> bool:
    """A kind and context id the writer accepts (memoised: a log holds few of either)."""
    return KIND.fullmatch(kind) is not None and CTX_ID.fullmatch(ctx) is not None


def parse_line(line: bytes | memoryview, *, session: str, offset: int, seq: int | None = None) -> Event:
    """Parse one line (with or without its newline) found at ``offset``; ``seq`` is what it must hold."""
    where = f"session {session}: the line at byte {offset}" + (f" (seq {seq})" if seq is not None else "")
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise CorruptLogError(f"{where} is not JSON ({exc.msg}, at byte {offset + exc.pos}); {FIX}") from None
    if not isinstance(obj, dict) or tuple(obj) != ENVELOPE:
        keys = list(obj) if isinstance(obj, dict) else type(obj).__name__
        raise CorruptLogError(f"{where} is not an event (keys {keys}, want {list(ENVELOPE)}); {FIX}")
    got, t, kind, ctx, data = obj["seq"], obj["t"], obj["kind"], obj["ctx"], obj["data"]
    if type(got) is not int or (seq is not None and got != seq):
        raise CorruptLogError(f"{where} holds seq {got!r}; seqs must run 1, 2, 3... without gaps; {FIX}")
    if not (isinstance(t, str) and isinstance(kind, str) and isinstance(ctx, str) and isinstance(data, dict)):
        raise CorruptLogError(
            f"{where} has a field of the wrong type (t, kind, ctx: string; data: object); {FIX}"
        )
    if not _writable(kind, ctx):
        raise CorruptLogError(
            f"{where} has kind {kind[:40]!r} and context id {ctx[:140]!r}, which the log never writes "
            f"(kinds are dotted lowercase, context ids 1-128 of [A-Za-z0-9_.:-]); {FIX}"
        )
    return Event(seq=got, t=t, kind=kind, ctx=ctx, data=data)
