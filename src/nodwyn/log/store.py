"""The session store: one folder per session under ``<root>/sessions/``, each holding

    log.jsonl     the events, one JSON line each (jsonl.py, docs/adr/0003-log-format.md)
    index.bin     seq -> end offset of its line (index.py, docs/adr/0006-index-format.md)
    lock          the writer's flock and pid (lock.py)
    seal.bin      seq -> chained HMAC, when the session is sealed (seal.py)
    attachments/  content-addressed bytes (attachments.py)

``Store(root)`` creates a session, opens one as a ``SessionLog`` (session_log.py), resolves an id
from a prefix or ``latest``, and lists them. A session written whole at once (an import) is written
in a staging store under ``<root>/.staging/`` without fsync, then adopted: flushed once and
renamed into ``sessions/``, so a crash leaves the whole session or none of it (ADR 0295).
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from nodwyn.errors import NodwynError, NotFoundError
from nodwyn.log.attachments import ATTACHMENTS_NAME, DIR_MODE, FILE_MODE, fsync_dir
from nodwyn.log.ids import is_session_id, new_session_id, session_start_time
from nodwyn.log.index import INDEX_NAME, IndexFile
from nodwyn.log.lock import LOCK_NAME, pid_alive
from nodwyn.log.paths import sessions_dir, storage_error
from nodwyn.log.redact import NO_KNOWN, Known
from nodwyn.log.seal import SEAL_NAME, SealKey
from nodwyn.log.session_log import LOG_NAME, SessionInfo, SessionLog, format_time, utc_now

STAGING_NAME = ".staging"


class Store:
    """All sessions under ``root`` (the data root; see ``nodwyn.log.paths.data_root``)."""

    def __init__(
        self,
        root: Path,
        *,
        fsync: bool = True,
        clock: Callable[[], datetime] | None = None,
        known: Known = NO_KNOWN,
        seal: SealKey | None = None,
    ) -> None:
        self.root = Path(root)
        self.seal = seal  # the key sealing every session this store creates (seal.py, ADR 0336)
        self.sessions = sessions_dir(self.root)
        self.fsync = fsync
        self.known = known  # credential values every log it opens for writing redacts
        self._clock = clock or utc_now

    def create(self, now: datetime | None = None) -> SessionLog:
        """A new, empty session, locked and open for writing. A disk that refuses is a
        ``StorageError`` in one line, and leaves no half-made session folder behind."""
        moment = now or self._clock()
        try:
            if self.root.exists() and not self.root.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(self.root))
            self.root.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            self.sessions.mkdir(mode=DIR_MODE, exist_ok=True)
        except OSError as exc:
            raise storage_error(exc, f"cannot make the sessions folder {self.sessions}") from None
        for _ in range(16):
            sid = new_session_id(moment)
            folder = self.sessions / sid
            try:
                folder.mkdir(mode=DIR_MODE)
            except FileExistsError:
                continue
            except OSError as exc:
                raise storage_error(exc, f"cannot create a session in {self.sessions}") from None
            break
        else:  # pragma: no cover - 16 collisions of 32 random bits
            raise NodwynError(f"could not create a new session folder in {self.sessions}")
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
            os.close(os.open(folder / LOG_NAME, flags, FILE_MODE))
            IndexFile.write_new(folder / INDEX_NAME, ()).close()
            if self.fsync:
                fsync_dir(folder)
                fsync_dir(self.sessions)
            return self._log(sid, folder, write=True)
        except BaseException as exc:
            for leftover in folder.glob(f"{INDEX_NAME}.tmp-*"):
                leftover.unlink(missing_ok=True)
            self.discard(sid)
            if isinstance(exc, OSError):
                raise storage_error(exc, f"cannot create a session in {self.sessions}") from None
            raise

    def staging(self, clock: Callable[[], datetime] | None = None) -> Store:
        """An empty store of this process under ``<root>/.staging/``, for a session to be written
        whole and then ``adopt``-ed; it writes without fsync (``adopt`` flushes once). Staging
        stores left by processes that died (a killed import) are removed first. The caller removes
        the one it gets (``shutil.rmtree(staged.root)``) when done. ``clock`` dates what it writes
        (an import: the source's own times), this store's clock by default."""
        parent = self.root / STAGING_NAME
        try:
            for left in parent.iterdir() if parent.is_dir() else ():
                pid, _, _ = left.name.partition("-")
                if not (pid.isdigit() and pid_alive(int(pid))):
                    shutil.rmtree(left, ignore_errors=True)
        except OSError as exc:
            raise storage_error(exc, f"cannot read the staging folder {parent}") from None
        root = parent / f"{os.getpid()}-{secrets.token_hex(4)}"
        return Store(root, fsync=False, clock=clock or self._clock, known=self.known, seal=self.seal)

    def adopt(self, staged: Store, session_id: str) -> None:
        """Move ``session_id``, closed, from ``staged`` (see ``staging``) into this store: its files
        are flushed to disk, then its folder is renamed into ``sessions/`` (one atomic step)."""
        source = staged.folder(session_id)
        target = self.sessions / session_id
        try:
            self.sessions.mkdir(mode=DIR_MODE, exist_ok=True)
            if target.exists():
                raise FileExistsError(errno.EEXIST, "File exists", str(target))
            if self.fsync:
                for path in sorted(source.rglob("*")):
                    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                    try:
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                fsync_dir(source)
            os.rename(source, target)
            if self.fsync:
                fsync_dir(self.sessions)
        except OSError as exc:
            raise storage_error(exc, f"cannot move session {session_id} into {self.sessions}") from None

    def discard(self, session_id: str) -> bool:
        """Remove a session folder that holds no event (what a start that failed at its first
        append leaves behind); a folder with anything in its log is left alone. Whether it went."""
        folder = self.folder(session_id)
        log = folder / LOG_NAME
        try:
            if log.exists() and log.stat().st_size > 0:
                return False
            for name in (LOG_NAME, INDEX_NAME, LOCK_NAME, SEAL_NAME):
                (folder / name).unlink(missing_ok=True)
            attachments = folder / ATTACHMENTS_NAME
            if attachments.is_dir():
                attachments.rmdir()  # fails (and keeps the folder) unless it is empty
            folder.rmdir()
        except OSError:
            return False
        return True

    def folder(self, session_id: str) -> Path:
        if not is_session_id(session_id):
            raise NotFoundError(
                f"{session_id!r} is not a session id (YYYYMMDDTHHMMSSZ-xxxxxxxx); "
                "`nodwyn sessions` lists them"
            )
        folder = self.sessions / session_id
        if not folder.is_dir():
            raise NotFoundError(f"no session {session_id} in {self.sessions}; `nodwyn sessions` lists them")
        return folder

    def open(self, session_id: str, write: bool = False) -> SessionLog:
        try:
            folder = self.folder(session_id)
        except OSError as exc:
            raise storage_error(exc, f"cannot read the sessions folder {self.sessions}") from None
        return self._log(session_id, folder, write=write)

    def _log(self, session_id: str, folder: Path, *, write: bool) -> SessionLog:
        return SessionLog(
            session_id=session_id,
            path=folder,
            write=write,
            fsync=self.fsync,
            clock=self._clock,
            known=self.known,
            seal=self.seal,
        )

    def ids(self) -> list[str]:
        try:
            if not self.sessions.is_dir():
                if self.root.exists() and not self.root.is_dir():
                    raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(self.root))
                return []
            ids = sorted(p.name for p in self.sessions.iterdir() if is_session_id(p.name) and p.is_dir())
        except OSError as exc:
            raise storage_error(exc, f"cannot list the sessions in {self.sessions}") from None
        return self._in_start_order(ids)

    def _in_start_order(self, ids: list[str]) -> list[str]:
        """``ids`` (sorted) oldest first: an id names its start to the second only, so sessions
        started in the same second are ordered by the microsecond time their first event
        records; one with no event yet counts as the newest."""
        second = [sid[:16] for sid in ids]
        if len(set(second)) == len(second):
            return ids
        tied = {s for s in second if second.count(s) > 1}
        return sorted(ids, key=lambda sid: (sid[:16], self._start_time(sid) if sid[:16] in tied else "", sid))

    def _start_time(self, session_id: str) -> str:
        """The ``t`` of the session's first event, or "~" (after any time) when there is none."""
        try:
            with (self.sessions / session_id / LOG_NAME).open("rb") as f:
                head = f.read(64)
        except OSError:
            return "~"
        start = head.find(b'"t":"')
        end = head.find(b'"', start + 5)
        return head[start + 5 : end].decode("ascii", "replace") if start >= 0 and end > 0 else "~"

    def resolve(self, prefix: str) -> str:
        """The one session id starting with ``prefix``, or whose random suffix starts with it
        (``fcdd3c3d`` for ``20261129T170712Z-fcdd3c3d``); ``latest`` (or ``last``) names the newest."""
        if is_session_id(prefix):
            return prefix
        if prefix in ("latest", "last"):
            ids = self.ids()
            if not ids:
                raise NotFoundError(f"no sessions under {self.sessions}; start one with `nodwyn run`")
            return ids[-1]
        matches = (
            [sid for sid in self.ids() if sid.startswith(prefix) or sid[17:].startswith(prefix)]
            if prefix
            else []
        )
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise NotFoundError(
                f"no session matches {prefix!r} in {self.sessions}; `nodwyn sessions` lists them"
            )
        raise NotFoundError(
            f"{prefix!r} matches {len(matches)} sessions in {self.sessions} "
            f"({matches[0]}, {matches[1]}, ...); give more of the id"
        )

    def info(self, session_id: str) -> SessionInfo:
        try:
            with self.open(session_id) as log:
                return log.info()
        except NodwynError as exc:
            path = self.sessions / session_id / LOG_NAME
            return SessionInfo(
                id=session_id,
                start=format_time(session_start_time(session_id)),
                last=None,
                events=0,
                size=path.stat().st_size if path.exists() else 0,
                error=str(exc),
            )

    def list(self) -> list[SessionInfo]:
        """Every session, oldest first; one that cannot be read says why in ``error``."""
        return [self.info(sid) for sid in self.ids()]
