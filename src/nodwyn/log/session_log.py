"""One session's log: ``<session>/log.jsonl`` and its index, read and appended.

A ``SessionLog`` opened for writing holds the lock (lock.py), cuts a torn tail on open (and logs
``log.repaired``), redacts and fsyncs every append (docs/adr/0004-durability.md), and keeps the
seq -> offset index (index.py) in step. A reader takes no lock and sees only whole events, even
while a writer appends; it reads any seq range by seeking through the index. ``Store`` (store.py)
creates and opens them.
"""

from __future__ import annotations

import contextlib
import os
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from nodwyn.errors import CanonicalError, CorruptLogError, NodwynError
from nodwyn.log.attachments import ATTACHMENTS_NAME, Attachments
from nodwyn.log.ids import session_start_time
from nodwyn.log.index import INDEX_NAME, IndexFile, check_tail, rebuild, scan_lines
from nodwyn.log.jsonl import CTX_ID, FIX, KIND, encode_line, parse_line
from nodwyn.log.lock import SessionLock
from nodwyn.log.paths import storage_error
from nodwyn.log.redact import NO_KNOWN, Known, redact
from nodwyn.log.seal import Sealer, SealKey
from nodwyn.values.events import MAIN_CTX, Event, LogRepaired, Payload, encode

LOG_NAME: Final = "log.jsonl"
REDACTION_KEY: Final = "_redaction"
_LAG_REOPEN: Final = 64  # a reader re-checks index.bin when this many lines lack an entry
_READ_BATCH: Final = 4096  # index entries fetched at once
_READ_BYTES: Final = 4 << 20  # log bytes read at once (a longer line is read alone)


def format_time(moment: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS.ffffffZ`` in UTC."""
    if moment.tzinfo is None:
        raise ValueError("event time must be timezone-aware")
    utc = moment.astimezone(UTC).replace(tzinfo=None)
    return utc.isoformat(timespec="microseconds") + "Z"


def utc_now() -> datetime:
    return datetime.now(UTC)


def _same_file(path: Path, fd: int) -> bool:
    try:
        there = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (there.st_dev, there.st_ino) == (held.st_dev, held.st_ino)


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionInfo:
    id: str
    start: str  # time of the first event, else the start the id names
    last: str | None  # time of the last event
    events: int
    size: int  # bytes of log.jsonl
    torn_bytes: int = 0  # bytes after the last whole event (a torn write, or one in progress)
    error: str | None = None  # why the session could not be read


@dataclass(frozen=True, slots=True)
class _View:
    """What a log holds at one moment: ``count`` whole events ending at ``whole_end``."""

    count: int
    whole_end: int
    size: int
    file: IndexFile | None = None
    file_count: int = 0  # seqs 1..file_count come from the file
    tail: Sequence[int] = ()  # end offsets of seqs file_count+1..count

    def ends(self, first: int, last: int) -> list[int]:
        """End offsets of seqs ``first..last``; ``first`` may be 0 (end 0)."""
        out: list[int] = []
        if first == 0:
            out.append(0)
            first = 1
        if self.file is not None and first <= min(last, self.file_count):
            out.extend(self.file.ends(first, min(last, self.file_count)))
        low = max(first, self.file_count + 1)
        if low <= last:
            out.extend(self.tail[low - self.file_count - 1 : last - self.file_count])
        return out


class SessionLog:
    """One session's log. Get one from ``Store.create`` or ``Store.open``; close it (or use ``with``)."""

    def __init__(
        self,
        *,
        session_id: str,
        path: Path,
        write: bool,
        fsync: bool = True,
        clock: Callable[[], datetime] = utc_now,
        known: Known = NO_KNOWN,
        seal: SealKey | None = None,
    ) -> None:
        self.id = session_id
        self._seal_key = seal if write else None
        self._sealer: Sealer | None = None  # set on a writer's open when the session is sealed
        self.known = known  # held credential values: replaced in every append and attachment
        self.path = path
        self.writable = write
        self._fsync = fsync
        self._clock = clock
        self._lock: SessionLock | None = None
        self._idx: IndexFile | None = None
        self._mem: array[int] | None = None  # a reader's own index when index.bin is unusable
        self._count = 0
        self._end = 0
        self.repaired: Event | None = None  # the log.repaired event a writer's open appended
        self.attachments = Attachments(path / ATTACHMENTS_NAME, session_id, fsync=fsync, known=known)
        try:
            if write:
                self._lock = SessionLock(path, session_id)
            self._fd = self._open_log(write)
            self._idx = IndexFile.open(path / INDEX_NAME, writable=write)
            if write:
                self._recover()
        except OSError as exc:
            self.close()
            how = "for writing" if write else "for reading"
            raise storage_error(exc, f"cannot open session {session_id} {how}") from None
        except BaseException:
            self.close()
            raise

    def _open_log(self, write: bool) -> int:
        """``log.jsonl``, and for a writer its flock, on the file that is there once locked."""
        flags = ((os.O_RDWR | os.O_APPEND) if write else os.O_RDONLY) | os.O_CLOEXEC
        target = self.path / LOG_NAME
        while True:
            try:
                fd = os.open(target, flags)
            except FileNotFoundError:
                raise CorruptLogError(
                    f"session {self.id}: {target} is missing; the session folder is incomplete"
                ) from None
            if not write:
                return fd
            try:
                assert self._lock is not None
                self._lock.lock_log(fd, target)
                if _same_file(target, fd):
                    return fd
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # replaced between open and flock: lock the one there now

    def _check_same(self) -> None:
        """The writer's log is still the file at ``log.jsonl``: one renamed over it (or removed) would
        take appends no reader sees, and a second writer could lock the new one."""
        if not _same_file(self.path / LOG_NAME, self._fd):
            raise CorruptLogError(
                f"session {self.id}: {self.path / LOG_NAME} was replaced or removed while this writer "
                "held it; nothing more is appended; restore the session folder from a backup, or "
                "resume it to go on from the file there now"
            )

    # -- state -------------------------------------------------------------------------------

    @property
    def stale_lock_pid(self) -> int | None:
        """The pid of a dead writer whose lock this writer took over, if any."""
        return self._lock.stale_pid if self._lock is not None else None

    @property
    def last_seq(self) -> int:
        return self._count if self.writable else self._view().count

    @property
    def torn_bytes(self) -> int:
        """Bytes after the last whole event: a torn write (or, while a writer appends, one in progress)."""
        view = self._view()
        return view.size - view.whole_end

    def info(self) -> SessionInfo:
        """What ``nodwyn sessions`` lists about this log, from one look at it."""
        view = self._view()
        first = next(self.read(1, 1), None)
        last = next(self.read(view.count, view.count), None) if view.count else None
        return SessionInfo(
            id=self.id,
            start=first.t if first else format_time(session_start_time(self.id)),
            last=last.t if last else None,
            events=view.count,
            size=view.size,
            torn_bytes=view.size - view.whole_end,
        )

    def offset_of(self, seq: int) -> int | None:
        """Byte offset in log.jsonl where ``seq``'s line starts (None if there is no such event)."""
        view = self._view()
        if not 1 <= seq <= view.count:
            return None
        return view.ends(seq - 1, seq - 1)[0]

    def _view(self) -> _View:
        if self._fd < 0:
            raise NodwynError(f"session {self.id}: the log is closed")
        if self._mem is None and self._idx is not None:
            # read the index before the log's size: an entry is written after its line
            count = self._idx.count()
            size = os.fstat(self._fd).st_size
            if check_tail(self._fd, self._idx, size):
                start = self._idx.end(count)
                scan = scan_lines(self._fd, start, size, count + 1)
                if scan.bad_seq is None:
                    if len(scan.ends) > _LAG_REOPEN and not self.writable and self._reopen_index():
                        return self._view()  # the writer replaced index.bin: use the new one
                    return _View(
                        count=count + len(scan.ends),
                        whole_end=scan.whole_end,
                        size=size,
                        file=self._idx,
                        file_count=count,
                        tail=scan.ends,
                    )
        return self._mem_view()

    def _reopen_index(self) -> bool:
        """A reader's index file lags far behind: if a writer replaced it, open the new one."""
        assert self._idx is not None
        try:
            replaced = os.stat(self._idx.path).st_ino != os.fstat(self._idx.fd).st_ino
        except FileNotFoundError:
            return False
        fresh = IndexFile.open(self._idx.path, writable=False) if replaced else None
        if fresh is None:
            return False
        self._idx.close()
        self._idx = fresh
        return True

    def _mem_view(self) -> _View:
        size = os.fstat(self._fd).st_size
        if self._mem is not None:
            start = self._mem[-1] if self._mem else 0
            scan = scan_lines(self._fd, start, size, len(self._mem) + 1)
            if scan.bad_seq is None:
                self._mem.extend(scan.ends)
                return _View(count=len(self._mem), whole_end=scan.whole_end, size=size, tail=self._mem)
        scan = rebuild(self._fd, size, self.id)
        count = len(scan.ends)
        if self.writable:
            self._replace_index(scan.ends)
            return _View(count=count, whole_end=scan.whole_end, size=size, file=self._idx, file_count=count)
        self._mem = array("Q", scan.ends)
        return _View(count=count, whole_end=scan.whole_end, size=size, tail=self._mem)

    def _replace_index(self, ends: Sequence[int]) -> None:
        if self._idx is not None:
            self._idx.close()
            self._idx = None
        self._idx = IndexFile.write_new(self.path / INDEX_NAME, ends)

    def _recover(self) -> None:
        """Writer's open: bring the index up to the log, cut a torn tail and log that it did."""
        size = os.fstat(self._fd).st_size
        idx, scan = self._idx, None
        if idx is not None and check_tail(self._fd, idx, size):
            count = idx.count()
            idx.truncate(count)  # drop a half-written entry
            scan = scan_lines(self._fd, idx.end(count), size, count + 1)
            if scan.bad_seq is None:
                idx.extend(count + 1, scan.ends)
                self._count, self._end = count + len(scan.ends), scan.whole_end
        if scan is None or scan.bad_seq is not None:  # no index to catch up: rebuild it from the log
            scan = rebuild(self._fd, size, self.id)
            self._replace_index(scan.ends)
            self._count, self._end = len(scan.ends), scan.whole_end
        if self._seal_key is not None:
            self._sealer = Sealer.start(self._seal_key, self.path, self.id, self._count, self._fsync)
        if size > self._end:
            os.ftruncate(self._fd, self._end)
            os.fsync(self._fd)
            self.repaired = self.append(LogRepaired(truncated_bytes=size - self._end, offset=self._end))

    # -- writing -----------------------------------------------------------------------------

    def append(self, payload: Payload, ctx: str = MAIN_CTX) -> Event:
        """Write ``payload`` as the next event of its kind (read back through the codec first, so
        what a reader would refuse is refused here, before anything is written), redacted and
        durable; return the event as stored."""
        return self.append_raw(payload.KIND, encode(payload), ctx)

    def append_raw(self, kind: str, data: dict[str, Any], ctx: str = MAIN_CTX) -> Event:
        """Redact ``data``, write it as the next event, make it durable; return the event as stored.
        Only the envelope is checked: the log's own tests, and a test forging a damaged event, use
        it; everything else appends a typed payload (``append``)."""
        self._check_append(kind, data, ctx)
        clean, report = redact(data, self.known)
        if report.changed or report.unknown_entropy:
            clean[REDACTION_KEY] = report.as_json()
        seq = self._count + 1
        try:
            line = encode_line(seq, format_time(self._clock()), kind, ctx, clean)
        except TypeError as exc:
            raise CanonicalError(
                f"session {self.id}: {kind} data is not JSON ({exc}); nothing was written"
            ) from None
        start = self._end
        self._check_same()
        sealer = self._sealer
        mac = self._seal(sealer, seq, line, kind) if sealer is not None else None
        try:
            self._write(line, seq, kind)
        except BaseException:
            if sealer is not None:
                with contextlib.suppress(OSError):
                    sealer.undo(seq)
            raise
        if sealer is not None and mac is not None:
            sealer.written(mac)
        end = start + len(line)
        self._count, self._end = seq, end  # durable now: the index below is derived data
        self._index(seq, end)
        return parse_line(line, session=self.id, offset=start, seq=seq)

    def _check_append(self, kind: str, data: dict[str, Any], ctx: str) -> None:
        """The log is open for writing, and the event's kind, context and data are well formed."""
        if not self.writable or self._lock is None or not self._lock.held:
            raise NodwynError(f"session {self.id}: the log is not open for writing; open it with write=True")
        if not KIND.fullmatch(kind):
            raise CanonicalError(
                f"session {self.id}: event kind {kind!r} is not dotted lowercase (e.g. 'llm.req')"
            )
        if not isinstance(ctx, str) or not CTX_ID.fullmatch(ctx):
            raise CanonicalError(f"session {self.id}: context id {ctx!r} must be 1-128 of [A-Za-z0-9_.:-]")
        if not isinstance(data, dict):
            raise CanonicalError(
                f"session {self.id}: {kind} data must be a JSON object, not {type(data).__name__}"
            )
        if REDACTION_KEY in data:
            raise CanonicalError(
                f"session {self.id}: {kind} data may not hold {REDACTION_KEY!r}; the log sets it"
            )

    def _write(self, line: bytes, seq: int, kind: str) -> None:
        """Write ``line`` at the log's end and make it durable, or leave no part of it behind."""
        start = self._end
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(self._fd, view) :]
            if self._fsync:
                os.fdatasync(self._fd)
        except OSError as exc:
            try:
                os.ftruncate(self._fd, start)  # leave no partial line behind
                kept = "nothing of it was written"
            except OSError:
                kept = "the next writer cuts the part that was written"
            raise storage_error(
                exc,
                f"session {self.id}: seq {seq} ({kind}) could not be written to the log ({kept}; "
                f"the log ends at seq {seq - 1}, whole)",
            ) from None
        except BaseException:
            os.ftruncate(self._fd, start)  # leave no partial line behind
            raise

    def _seal(self, sealer: Sealer, seq: int, line: bytes, kind: str) -> bytes:
        try:
            return sealer.before(seq, line)
        except OSError as exc:
            raise storage_error(
                exc, f"session {self.id}: seq {seq} ({kind}) could not be sealed (nothing was written)"
            ) from None

    @property
    def sealing(self) -> bool:
        """Whether this writer seals what it appends (``seal.py``)."""
        return self._sealer is not None

    def _index(self, seq: int, end: int) -> None:
        if self._idx is None:
            return
        try:
            self._idx.append(seq, end)
        except OSError:
            # the next read or open rebuilds it from the log; the event stands
            self._idx.close()
            self._idx = None

    # -- reading -----------------------------------------------------------------------------

    def read(self, first: int = 1, last: int | None = None) -> Iterator[Event]:
        """Events ``first..last`` (inclusive; ``last`` None: the last whole one now) in seq order.

        The range is fixed when ``read`` is called. Starting anywhere is a seek through the index.
        """
        view = self._view()
        high = view.count if last is None else min(last, view.count)
        return self._events(view, max(first, 1), high)

    def _events(self, view: _View, first: int, high: int) -> Iterator[Event]:
        seq = first
        rebuilt = False
        while seq <= high:
            ends = view.ends(seq - 1, min(high, seq - 1 + _READ_BATCH))
            try:
                for event in self._lines(ends, seq):
                    yield event
                    seq += 1
            except CorruptLogError:
                if rebuilt:
                    raise
                # the index may be what is wrong: rebuild it from the log (this raises if the log
                # itself is out of sequence) and look again
                rebuilt = True
                self._mem = None
                if self._idx is not None and not self.writable:
                    self._idx.close()
                    self._idx = None
                view = self._mem_view()
                high = min(high, view.count)

    def _lines(self, ends: Sequence[int], seq: int) -> Iterator[Event]:
        """Parse the lines whose bounds ``ends`` gives (``ends[0]`` is where ``seq`` starts)."""
        i = 0
        while i + 1 < len(ends):
            j = i + 1  # read lines i..j-1 in one go, up to _READ_BYTES (a longer line alone)
            while j + 1 < len(ends) and ends[j + 1] - ends[i] <= _READ_BYTES:
                j += 1
            base = ends[i]
            buf = memoryview(os.pread(self._fd, max(ends[j] - base, 0), base))
            for k in range(i, j):
                s, e = ends[k] - base, ends[k + 1] - base
                if not 0 <= s < e <= len(buf) or buf[e - 1] != 0x0A:
                    raise CorruptLogError(
                        f"session {self.id}: seq {seq} should end at byte {ends[k + 1]}, "
                        f"but no line ends there; {FIX}"
                    )
                yield parse_line(buf[s:e], session=self.id, offset=ends[k], seq=seq)
                seq += 1
            i = j

    # -- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        if getattr(self, "_fd", -1) >= 0:
            os.close(self._fd)
        self._fd = -1
        if self._idx is not None:
            self._idx.close()
            self._idx = None
        if self._sealer is not None:
            self._sealer.close()
            self._sealer = None
        if self._lock is not None:
            self._lock.release()

    def __del__(self) -> None:
        # descriptors are plain ints: a log dropped without close() must not leak them (or the lock)
        with contextlib.suppress(Exception):
            self.close()

    def __enter__(self) -> SessionLog:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SessionLog({self.id!r}, write={self.writable})"
