"""The exclusive writer lock of one session: ``flock`` on ``<session>/lock`` (holding the pid) and
on the log file itself (``lock_log``, ADR 0330).

The kernel releases an ``flock`` when its holder dies, so a lock of a dead process is free by
construction; the pid in the file is only for the message. A second writer (another process, or
another open in this one) gets ``LockedError`` naming the session and the holder's pid. The lock
file can be replaced by rename under a live writer (a sync tool, a file tool); the log file's own
lock still refuses the second writer, because both would open the same ``log.jsonl``.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from nodwyn.errors import LockedError

LOCK_NAME = "lock"


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_pid(fd: int) -> int | None:
    raw = os.pread(fd, 32, 0).strip()
    try:
        return int(raw) if raw else None
    except ValueError:
        return None


class SessionLock:
    """Held from construction until ``release()``. ``stale_pid``: a dead holder whose pid was left."""

    __slots__ = ("_fd", "path", "session", "stale_pid")

    def __init__(self, session_dir: Path, session: str) -> None:
        self.path = session_dir / LOCK_NAME
        self.session = session
        self.stale_pid: int | None = None
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                holder = _read_pid(fd)
                os.close(fd)
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                raise LockedError(self._held_message(holder)) from None
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the file was removed or replaced under us: lock the one there now
        previous = _read_pid(fd)
        if previous is not None and previous != os.getpid() and not pid_alive(previous):
            self.stale_pid = previous
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd: int | None = fd

    def lock_log(self, fd: int, log_path: Path) -> None:
        """Take ``flock`` on the log file open at ``fd``: the one lock a replaced lock file cannot
        give to a second writer. ``LockedError`` when another writer holds it."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise LockedError(
                f"session {self.session} ({log_path}) is being written by another process, although "
                f"its lock file {self.path} was free: the lock file was replaced while that writer ran; "
                "wait for it or stop that nodwyn"
            ) from None

    def _held_message(self, holder: int | None) -> str:
        where = f"session {self.session} ({self.path})"
        if holder is None:
            return f"{where} is locked by another writer (pid not recorded yet); retry, or stop that nodwyn"
        if holder == os.getpid():
            return f"{where} is already open for writing in this process (pid {holder}); close it first"
        if pid_alive(holder):
            return f"{where} is locked by pid {holder}, which is writing it; wait for it or stop that process"
        return (
            f"{where} is locked although its recorded holder, pid {holder}, has exited; a process it "
            "started still holds the lock: stop that process"
        )

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
        finally:
            os.close(fd)  # closing the last descriptor drops the flock
