"""Exact replay: rebuild request SEQ from the log alone and prove it by its recorded digest.

``replay_request(log, seq)`` reads the ``llm.req`` at ``seq``, feeds a fresh window the events it
needs (from the start point the request recorded: the recipe in force, the open contexts, and the
events since the conversation was last cut; the whole prefix for a request that recorded none),
builds the request with the options the ``llm.req`` recorded (context, target origin, tool-less or
partial turn, headroom, withheld images) and returns it only if the digest of its canonical bytes
is the recorded one. Every event is validated before the window sees it (``validate.py``).

Refusals (``nodwyn.errors``): ``DigestMismatchError`` (both digests and the first differing
byte, see ADR 0036), ``LegacyRequestError`` (no recipe or no digest), ``UnknownRecipeError``,
``CorruptLogError`` (naming the seq and byte offset), ``NotFoundError`` (no request at SEQ).

Replay reads only the log: never the configuration or extension files; it runs no model or tool.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

from nodwyn.errors import (
    CanonicalError,
    CorruptLogError,
    DigestMismatchError,
    LegacyRequestError,
    NodwynError,
    NotFoundError,
    ReplayError,
)
from nodwyn.log import SessionLog, seq_prefix
from nodwyn.replay.diff import describe
from nodwyn.replay.tolerant import raw_lines
from nodwyn.replay.validate import check_event, place
from nodwyn.values import codec
from nodwyn.values.canonical import canonical_bytes
from nodwyn.values.events import (
    Event,
    LlmReq,
    Payload,
    SessionResume,
    SessionStart,
)
from nodwyn.values.request import Request
from nodwyn.window import Window, recorded_start, recorded_turn, recorded_withheld


@dataclass(frozen=True, slots=True, kw_only=True)
class Replayed:
    seq: int
    ctx: str
    request: Request
    canonical: bytes  # JCS bytes of codec.request_to_json(request)
    digest: str  # "sha256:" + hex of ``canonical``; equal to the recorded one
    recipe_version: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """One request of ``verify_all``: verified (``replayed``) or refused (``error``)."""

    seq: int
    ctx: str
    recorded: str | None
    replayed: Replayed | None = None
    error: NodwynError | None = None


# -- helpers -------------------------------------------------------------------------------------


def offset_of(log: SessionLog, seq: int) -> int | None:
    """Byte offset of ``seq``'s line, for messages (only ever on the way to a refusal): from the
    log's index, else, when the log cannot give it, by counting lines. None if there is no line."""
    try:
        off = log.offset_of(seq)
    except NodwynError:
        off = None
    if off is not None:
        return off
    try:
        for n, (off, line, _) in enumerate(raw_lines(log), start=1):
            if n == seq:
                return off if line.startswith(seq_prefix(seq)) else None
    except OSError:
        pass
    return None


def _sha(canonical: bytes) -> str:
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


def _checked(log: SessionLog, ev: Event, expected: int | None) -> Payload:
    """``check_event``: the typed payload; a refusal names the line's byte offset, looked up only then."""
    try:
        return check_event(ev, expected, log.id)
    except CorruptLogError:
        check_event(ev, expected, log.id, offset_of(log, ev.seq))
        raise


class _Replayer:
    """A window fed validated events, and the recipe in force, for one pass over a log."""

    def __init__(self, log: SessionLog) -> None:
        self.log = log
        self.window = Window()
        self.recipe_version: int | None = None  # None: no recipe event yet
        self.legacy_recipe_seq: int | None = None  # a session event without a recipe
        self.next_seq = 1  # the seq the next contiguous event must have

    def corrupt(self, seq: int, why: str) -> CorruptLogError:
        return CorruptLogError(f"{place(self.log.id, seq, offset_of(self.log, seq))}: {why}")

    def check(self, ev: Event, *, contiguous: bool = True) -> Payload:
        return _checked(self.log, ev, self.next_seq if contiguous else None)

    def take(self, ev: Event, p: Payload) -> None:
        """Feed an event ``check`` passed (``p``: its payload) to the window."""
        if isinstance(p, SessionStart | SessionResume):
            if p.recipe is not None:  # decoding it refused a version this release does not know
                self.recipe_version = p.recipe.version
                self.legacy_recipe_seq = None
            else:  # a legacy session event: the window cannot take it; requests after it are refused
                self.recipe_version = None
                self.legacy_recipe_seq = ev.seq
                self.next_seq = ev.seq + 1
                return
        try:
            self.window.feed(ev)
        except (CorruptLogError, NotFoundError) as exc:
            raise self.corrupt(ev.seq, f"the window refuses this event: {exc}") from None
        except CanonicalError as exc:
            raise self.corrupt(ev.seq, f"the event has no canonical form: {exc}") from None
        self.next_seq = ev.seq + 1

    def rebuild(self, req: Event, p: LlmReq) -> tuple[Request, bytes]:
        """The request ``req`` records, built by the window from the events before it, and its
        canonical bytes, computed afresh rather than taken from the build: the recorded digest came
        from the window's incremental encoding, and this is the independent check that it was the
        request's canonical form."""
        try:
            b = self.window.build(
                ctx=req.ctx,
                origin=p.origin,
                turn=recorded_turn(p),
                withheld=recorded_withheld(p),
            )
            return b.request, canonical_bytes(codec.request_to_json(b.request))
        except (CorruptLogError, NotFoundError) as exc:
            raise self.corrupt(req.seq, f"the window cannot build this request: {exc}") from None
        except CanonicalError as exc:
            raise self.corrupt(req.seq, f"the rebuilt request has no canonical form: {exc}") from None

    def build(self, req: Event, p: LlmReq) -> Replayed:
        """Rebuild the request ``req`` (payload ``p``) records and prove it by its digest."""
        where = f"session {self.log.id} request seq {req.seq}"
        if p.digest is None:
            raise LegacyRequestError(
                f"{where} records no digest (a legacy request); exact replay cannot prove it; "
                "`nodwyn replay SESSION` shows the transcript"
            )
        if self.recipe_version is None:
            why = (
                f"its session event seq {self.legacy_recipe_seq} records no recipe"
                if self.legacy_recipe_seq is not None
                else "no session.start or session.resume before it records a recipe"
            )
            raise LegacyRequestError(
                f"{where}: {why} (a legacy session); exact replay cannot rebuild it; "
                "`nodwyn replay SESSION` shows the transcript"
            )
        request, canonical = self.rebuild(req, p)
        rebuilt = _sha(canonical)
        if rebuilt != p.digest:
            raise DigestMismatchError(f"{where}: rebuilt {rebuilt} but the log recorded {p.digest}")
        return Replayed(
            seq=req.seq,
            ctx=req.ctx,
            request=request,
            canonical=canonical,
            digest=rebuilt,
            recipe_version=self.recipe_version,
        )


def _target(log: SessionLog, seq: int) -> tuple[Event, LlmReq]:
    found = next(log.read(seq, seq), None)
    if found is None:
        raise NotFoundError(
            f"session {log.id} has no seq {seq} (its last seq is {log.last_seq}); "
            "`nodwyn replay SESSION --all` lists its requests"
        )
    if found.seq != seq:
        raise CorruptLogError(f"{place(log.id, seq, offset_of(log, seq))}: the line holds seq {found.seq}")
    p = _checked(log, found, None)  # first: a damaged line is refused as damage, whatever its kind
    if not isinstance(p, LlmReq):
        raise NotFoundError(
            f"session {log.id} seq {seq} is a {found.kind}, not an llm.req; "
            "`nodwyn replay SESSION --all` lists its requests"
        )
    return found, p


def _replay_from(log: SessionLog, req: Event, p: LlmReq, start: int, keep: tuple[int, ...]) -> Replayed:
    """Feed the kept events, then ``start..req.seq-1`` with no gap, and rebuild ``req``."""
    r = _Replayer(log)
    for k in keep:
        ev = next(log.read(k, k), None)
        if ev is None:
            raise r.corrupt(k, f"the event request seq {req.seq} recorded as needed is missing")
        r.take(ev, r.check(ev, contiguous=False))
    r.next_seq = start
    for ev in log.read(start, req.seq - 1):
        r.take(ev, r.check(ev))
    if r.next_seq != req.seq:
        raise r.corrupt(r.next_seq, f"the events before request seq {req.seq} end at seq {r.next_seq - 1}")
    return r.build(req, p)


def replay_request(
    log: SessionLog, seq: int, *, expect: bytes | None = None, whole: bool = False, complete: bool = False
) -> Replayed:
    """The verified request recorded at ``seq``, or a refusal (see the module docstring).

    ``expect``: the canonical bytes captured when the request was sent, if the caller has them;
    a mismatch is then located against them instead of against the nearest verified request.
    ``whole``: ignore the recorded start point and feed every event from seq 1.
    ``complete``: refuse a partial or malformed log as exact CLI replay does: every
    event after ``seq`` must be whole and well formed, and no torn tail may follow the last one.
    """
    req, p = _target(log, seq)
    if complete:
        check_complete(log, seq)
    hint = None if whole else recorded_start(req)
    try:
        if hint is not None and hint.seq > 1:
            try:
                return _replay_from(log, req, p, hint.seq, hint.keep)
            except (ReplayError, CorruptLogError):
                pass  # a damaged hint (or a real fault): the whole prefix decides which
        return _replay_from(log, req, p, 1, ())
    except DigestMismatchError as exc:
        raise DigestMismatchError(f"{exc}; {_locate(log, req, p, expect)}") from None


def _locate(log: SessionLog, req: Event, p: LlmReq, expect: bytes | None) -> str:
    """Where the rebuilt bytes first differ, and from what (ADR 0036)."""
    rebuilt, prev = _rebuild_and_last_verified(log, req, p)
    if rebuilt is None:
        return "the rebuilt request could not be located against anything"
    if expect is not None:
        if _sha(expect) != p.digest:
            return f"the --expect bytes hash to {_sha(expect)}, not to the recorded digest either"
        return f"first difference from the bytes that were sent (--expect): {describe(rebuilt, expect)}"
    if prev is None:
        return (
            "the log holds only the digest of what was sent, and no earlier request of this context "
            "verifies, so no byte can be located; give the sent bytes with --expect"
        )
    return (
        f"the log holds only the digest of what was sent; first difference from the last verified "
        f"request of context {req.ctx} (seq {prev.seq}): {describe(rebuilt, prev.canonical)}"
    )


def _rebuild_and_last_verified(
    log: SessionLog, req: Event, p: LlmReq
) -> tuple[bytes | None, Replayed | None]:
    """One pass over the whole prefix: the target rebuilt without its digest check, and the last
    earlier request of its context that does verify."""
    r = _Replayer(log)
    last: Replayed | None = None
    try:
        for ev in log.read(1, req.seq - 1):
            earlier = r.check(ev)
            if isinstance(earlier, LlmReq) and ev.ctx == req.ctx and earlier.digest is not None:
                with contextlib.suppress(ReplayError):
                    last = r.build(ev, earlier)
            r.take(ev, earlier)
        return r.rebuild(req, p)[1], last
    except NodwynError:
        return None, last


def _refuse_torn(log: SessionLog) -> None:
    if torn := log.torn_bytes:
        raise CorruptLogError(
            f"session {log.id}: {torn} bytes after seq {log.last_seq} are not a whole event "
            "(a partial log); exact replay refuses it: let its writer finish, or resume the session "
            "(its next writer cuts a torn tail); `nodwyn replay SESSION` shows the transcript"
        )


def check_complete(log: SessionLog, after: int) -> None:
    """Refuse a partial or malformed log: a torn tail, or an event after ``after`` that is damaged
    or out of sequence (the events up to ``after`` are checked as the request is rebuilt)."""
    _refuse_torn(log)
    expected = after + 1
    for ev in log.read(expected):
        _checked(log, ev, expected)
        expected += 1


def verify_all(log: SessionLog) -> Iterator[Verdict]:
    """Every request of the log, in one pass: each verified or refused.

    A refusal of one request does not stop the pass (a legacy request, a mismatch, a request the
    window cannot build); damage to the log does, since nothing after it can be trusted: the last
    verdict then has ``ctx == "-"`` and carries the error, with the seq the pass stopped at.
    """
    r = _Replayer(log)
    try:
        for ev in log.read(1):
            p = r.check(ev)
            if isinstance(p, LlmReq):
                try:
                    yield Verdict(seq=ev.seq, ctx=ev.ctx, recorded=p.digest, replayed=r.build(ev, p))
                except (ReplayError, CorruptLogError) as exc:  # this request only; the pass goes on
                    yield Verdict(seq=ev.seq, ctx=ev.ctx, recorded=p.digest, error=exc)
            r.take(ev, p)
        _refuse_torn(log)
    except (CorruptLogError, ReplayError) as exc:
        yield Verdict(seq=r.next_seq, ctx="-", recorded=None, error=exc)
