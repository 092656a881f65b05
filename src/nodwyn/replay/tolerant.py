"""Reading a damaged log for the transcript: every whole event, and each damaged line noted.

Exact replay refuses a damaged log; the transcript shows what is left of it. Events are read with
the log's reader until it refuses; from there each line of ``log.jsonl`` is parsed on its own with
the log's own line parser, and a line that does not parse (or bytes after the last newline) is
reported as ``Damaged`` with its byte offset instead of stopping the reading.
"""

from __future__ import annotations

from collections.abc import Iterator

from nodwyn.errors import CorruptLogError
from nodwyn.log import LOG_NAME, SessionLog, parse_line
from nodwyn.replay.transcript import Damaged
from nodwyn.values.events import Event

_CHUNK = 1 << 20


def raw_lines(log: SessionLog) -> Iterator[tuple[int, bytes, bool]]:
    """(offset, line without its newline, whole) for every line; a tail no newline ends is not whole."""
    with open(log.path / LOG_NAME, "rb") as fh:
        offset, rest = 0, b""
        while chunk := fh.read(_CHUNK):
            rest += chunk
            start = 0
            while (j := rest.find(b"\n", start)) >= 0:
                yield offset, rest[start:j], True
                offset += j + 1 - start
                start = j + 1
            rest = rest[start:]
        if rest:
            yield offset, rest, False


def tolerant_events(log: SessionLog) -> Iterator[Event | Damaged]:
    """Every event of the log in file order, with the damaged lines among them."""
    done = 0
    try:
        for ev in log.read():
            done += 1
            yield ev
        tail = log.torn_bytes
        if tail:
            size = log.path.joinpath(LOG_NAME).stat().st_size
            yield Damaged(offset=size - tail, size=tail, reason="no newline ends it", torn=True)
        return
    except CorruptLogError:
        pass  # read on line by line from the first one the reader refused
    for n, (offset, line, whole) in enumerate(raw_lines(log)):
        if n < done:
            continue
        if not whole:
            yield Damaged(offset=offset, size=len(line), reason="no newline ends it", torn=True)
            continue
        try:
            yield parse_line(line, session=log.id, offset=offset)
        except CorruptLogError as exc:
            yield Damaged(offset=offset, size=len(line) + 1, reason=str(exc))
