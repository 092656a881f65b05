"""The process groups a session's shell commands started, so none outlives its session.

Each shell command runs in a session (and so a process group) of its own. A command's group is
killed when the command times out, floods its output, or is interrupted (Ctrl-C); a group that is
still alive when the command returns (something it put in the background) is kept here and killed
when the session ends (``kill_all``, called by ``Opened.close`` and, as a last resort, at exit).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
import time
import weakref

_LIVE: weakref.WeakSet[ProcessGroups] = weakref.WeakSet()


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):  # gone, or a reused id someone else owns: not ours
        return False
    return True


def kill_group(pgid: int, *, grace: float = 0.0) -> None:
    """SIGTERM (when ``grace``) then SIGKILL to the whole group; a group already gone is fine."""
    if grace > 0:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
        end = time.monotonic() + grace
        while time.monotonic() < end and group_alive(pgid):
            time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class ProcessGroups:
    """The groups of one session's commands that were still running when their command returned."""

    def __init__(self) -> None:
        self._groups: set[int] = set()
        self._lock = threading.Lock()
        _LIVE.add(self)

    def keep(self, pgid: int) -> None:
        with self._lock:
            self._groups.add(pgid)

    def forget(self, pgid: int) -> None:
        with self._lock:
            self._groups.discard(pgid)

    def running(self) -> list[int]:
        with self._lock:
            return sorted(g for g in self._groups if group_alive(g))

    def kill_all(self, *, grace: float = 0.5) -> None:
        with self._lock:
            groups, self._groups = self._groups, set()
        for pgid in groups:
            if group_alive(pgid):
                kill_group(pgid, grace=grace)


@atexit.register
def _kill_at_exit() -> None:
    for groups in list(_LIVE):
        groups.kill_all(grace=0.2)
