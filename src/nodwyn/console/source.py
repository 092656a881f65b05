"""Where the console and ``nodwyn stats`` read sessions from: the log store, opened read-only.

This is the one module that talks to ``nodwyn.log``; everything above it sees events.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodwyn.errors import NotFoundError
from nodwyn.log import Store
from nodwyn.values.events import Event


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionInfo:
    id: str
    last_seq: int


class Source:
    """Sessions under one store root, read without taking the writer's lock."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._store = Store(root)

    def ids(self) -> list[str]:
        out = []
        for item in self._store.list():
            out.append(item if isinstance(item, str) else str(getattr(item, "id", item)))
        return sorted(out, reverse=True)

    def open(self, session: str) -> Any:
        """The session's log, read-only; ``NotFoundError`` names the store if it is not there."""
        if "/" in session or session.startswith("."):
            raise NotFoundError(f"{session!r} is not a session id; list them with `nodwyn sessions`")
        return self._store.open(session, write=False)

    def last_seq(self, session: str) -> int:
        return int(self.open(session).last_seq)

    def read(self, session: str, first: int = 1, last: int | None = None) -> Iterator[Event]:
        yield from self.open(session).read(first, last)
