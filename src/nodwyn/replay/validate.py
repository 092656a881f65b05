"""Exact replay validates every event it reads before the window sees it.

The log layer checks that a line is a whole JSON object with an envelope; this module checks what
replay relies on beyond that: the kind is one of the vocabulary, the payload decodes as its kind's
class (``values.events``, the one place payload fields are checked), and the seqs run on with no
gap. Anything else is refused with ``CorruptLogError`` naming the seq (and the byte offset when the
log can tell it), so a damaged log is rejected instead of misread. A request without a digest and a
session without a recipe are not damage but legacy, and are refused as such by the caller.
"""

from __future__ import annotations

from nodwyn.errors import CorruptLogError, UnknownRecipeError
from nodwyn.log import CTX_ID
from nodwyn.values.events import KINDS, PAYLOADS, Event, LlmResp, Payload


def place(session: str, seq: int, offset: int | None) -> str:
    where = f"session {session} seq {seq}" if session else f"seq {seq}"
    return f"{where} (byte offset {offset})" if offset is not None else where


def check_event(ev: Event, expected_seq: int | None, session: str = "", offset: int | None = None) -> Payload:
    """Refuse an event replay cannot trust: wrong seq, unknown kind, payload of the wrong shape.
    Returns its typed payload."""
    here = place(session, ev.seq, offset)
    fix = "the log is damaged; exact replay refuses it (`nodwyn replay SESSION` still shows the transcript)"
    if expected_seq is not None and ev.seq != expected_seq:
        raise CorruptLogError(f"{here}: expected seq {expected_seq} (seqs run on with no gap); {fix}")
    if not isinstance(ev.kind, str) or ev.kind not in KINDS:
        raise CorruptLogError(f"{here}: unknown event kind {ev.kind!r}; {fix}")
    if not isinstance(ev.ctx, str) or not CTX_ID.fullmatch(ev.ctx):
        raise CorruptLogError(f"{here}: context id {ev.ctx!r} is not one the log writes; {fix}")
    if not isinstance(ev.data, dict):
        raise CorruptLogError(f"{here}: the payload is not an object; {fix}")
    try:
        payload = PAYLOADS[ev.kind].from_data(ev.data, ev.kind)
    except CorruptLogError as exc:
        raise CorruptLogError(f"{here}: {exc}; {fix}") from None
    except UnknownRecipeError as exc:  # not damage: a version this nodwyn does not know
        raise UnknownRecipeError(f"{here}: {exc}") from None
    if isinstance(payload, LlmResp) and payload.req >= ev.seq:
        raise CorruptLogError(f"{here}: reply names request seq {payload.req}, not an earlier one; {fix}")
    return payload
