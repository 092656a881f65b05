"""Where the console and ``nodwyn stats`` read sessions from: the log store, read-only.

This is the one module that talks to ``nodwyn.log``. A reader takes no lock and sees only whole
events, even while the session's writer appends, so one reader per session is kept open and
asked again for new events. Reads of one session are serialised (the web server answers from a
thread pool).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from nodwyn.log import SessionInfo, SessionLog, Store
from nodwyn.values.events import Event

T = TypeVar("T")


class Source:
    """Sessions under one data root (the folder holding ``sessions/``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._store = Store(root)
        self._logs: dict[str, SessionLog] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def ids(self) -> list[str]:
        """Session ids, newest first."""
        return self._store.ids()[::-1]

    def info(self, session: str) -> SessionInfo:
        return self._store.info(session)

    def _reader(self, session: str) -> tuple[SessionLog, threading.Lock]:
        with self._lock:
            log = self._logs.get(session)
            if log is None:
                log = self._store.open(session, write=False)  # NotFoundError for a bad id
                self._logs[session] = log
                self._locks[session] = threading.Lock()
            return log, self._locks[session]

    def check(self, session: str) -> None:
        """Raise ``NotFoundError`` unless ``session`` exists and opens."""
        self._reader(session)

    def with_log(self, session: str, use: Callable[[SessionLog], T]) -> T:
        """Run ``use`` on the session's reader, alone."""
        log, lock = self._reader(session)
        with lock:
            return use(log)

    def private(self, session: str) -> SessionLog:
        """A reader of the session's own, for long passes (replaying every request) that should
        not hold up the shared reader; close it when done."""
        return self._store.open(session, write=False)

    def last_seq(self, session: str) -> int:
        return self.with_log(session, lambda log: log.last_seq)

    def read(self, session: str, first: int = 1, last: int | None = None) -> list[Event]:
        return self.with_log(session, lambda log: list(log.read(first, last)))
