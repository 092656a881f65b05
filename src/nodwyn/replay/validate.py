"""Exact replay validates every event it reads before the window sees it.

The log layer checks that a line is a whole JSON object with an envelope; this module checks what
replay relies on beyond that: the kind is one of the vocabulary, the payload has the fields and
types of its kind (``values.events``), and the seqs run on with no gap. Anything else is refused
with ``CorruptLogError`` naming the seq (and the byte offset when the log can tell it), so a
damaged log is rejected instead of misread. A request without a digest and a session without a
recipe are not damage but legacy, and are refused as such by the caller.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from nodwyn.errors import CorruptLogError, UnknownRecipeError
from nodwyn.log.jsonl import CTX_ID
from nodwyn.values import codec
from nodwyn.values.events import KINDS, Event

Check = Callable[[dict[str, Any], str], None]
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


class _Bad(Exception):
    """A payload problem, turned into a CorruptLogError with the event's place by ``check_event``."""


def _field(
    d: dict[str, Any], key: str, typ: type | tuple[type, ...], where: str, required: bool = True
) -> Any:
    if key not in d:
        if required:
            raise _Bad(f"{where}: missing field {key!r}")
        return None
    v = d[key]
    if isinstance(v, bool) and typ in (int, (int, type(None))):
        raise _Bad(f"{where}.{key}: expected an integer, got a boolean")
    if not isinstance(v, typ):
        raise _Bad(f"{where}.{key}: expected {_name(typ)}, got {type(v).__name__}")
    return v


def _name(typ: type | tuple[type, ...]) -> str:
    if isinstance(typ, tuple):
        return " or ".join(t.__name__ for t in typ)
    return typ.__name__


def _ints(d: dict[str, Any], key: str, where: str, required: bool = True) -> None:
    items = _field(d, key, list, where, required)
    for i, v in enumerate(items or []):
        if not isinstance(v, int) or isinstance(v, bool):
            raise _Bad(f"{where}.{key}[{i}]: expected an integer, got {type(v).__name__}")


def _strs(d: dict[str, Any], key: str, where: str) -> None:
    for i, v in enumerate(_field(d, key, list, where, False) or []):
        if not isinstance(v, str):
            raise _Bad(f"{where}.{key}[{i}]: expected a string, got {type(v).__name__}")


def _session(d: dict[str, Any], w: str) -> None:
    _field(d, "model", str, w)
    _field(d, "workspace", str, w, False)
    if "recipe" in d:  # absent: a legacy session, refused by exact replay as such
        codec.recipe_from_json(_field(d, "recipe", dict, w), f"{w}.recipe")


def _user(d: dict[str, Any], w: str) -> None:
    _field(d, "text", str, w)
    for i, img in enumerate(_field(d, "images", list, w, False) or []):
        iw = f"{w}.images[{i}]"
        if not isinstance(img, dict):
            raise _Bad(f"{iw}: expected an object")
        _field(img, "digest", str, iw)
        _field(img, "media_type", str, iw)
        _field(img, "width", int, iw)
        _field(img, "height", int, iw)
        _field(img, "name", str, iw, False)
        _field(img, "host", (str, type(None)), iw, False)


def _req(d: dict[str, Any], w: str) -> None:
    _field(d, "model", str, w)
    codec.origin_from_json(_field(d, "origin", dict, w), f"{w}.origin")
    recorded = _field(d, "digest", str, w, False)  # absent: legacy, refused as such for the target request
    if recorded is not None and not _DIGEST.fullmatch(recorded):
        raise _Bad(f"{w}.digest: {recorded[:80]!r} is not 'sha256:' and 64 lowercase hex digits")
    _ints(d, "elided", w)
    _field(d, "estimate", int, w)
    _field(d, "trim", bool, w)
    _field(d, "high_water", int, w, False)
    _field(d, "below_low_blocked", bool, w, False)
    _field(d, "no_tools", bool, w, False)
    _strs(d, "offered_tools", w)
    for i, wi in enumerate(_field(d, "withheld_images", list, w, False) or []):
        ww = f"{w}.withheld_images[{i}]"
        if not isinstance(wi, dict):
            raise _Bad(f"{ww}: expected an object")
        _field(wi, "digest", str, ww)
        _field(wi, "reason", str, ww)
    _field(d, "max_output", int, w, False)
    _field(d, "headroom", bool, w, False)


def _resp(d: dict[str, Any], w: str) -> None:
    _field(d, "req", int, w)
    codec.response_from_json(_field(d, "response", dict, w), f"{w}.response")


def _result(d: dict[str, Any], w: str) -> None:
    _field(d, "call_id", str, w)
    _field(d, "name", str, w)
    _field(d, "text", str, w)
    _field(d, "error", bool, w)
    rng = _field(d, "range", (dict, type(None)), w, False)
    if rng is not None:
        for k in ("start", "end", "total"):
            _field(rng, k, int, f"{w}.range")


def _text(d: dict[str, Any], w: str) -> None:
    _field(d, "text", str, w)


def _fold(d: dict[str, Any], w: str) -> None:
    _field(d, "target", int, w)
    _field(d, "text", str, w)


def _summary(d: dict[str, Any], w: str) -> None:
    _field(d, "first", int, w)
    _field(d, "last", int, w)
    _field(d, "text", str, w)
    _field(d, "source_digest", str, w)


def _revoke(d: dict[str, Any], w: str) -> None:
    _field(d, "summary", int, w)


def _open(d: dict[str, Any], w: str) -> None:
    _field(d, "id", str, w)
    kind = _field(d, "kind", str, w)
    if kind not in ("narrow", "sub"):
        raise _Bad(f"{w}.kind: unknown context kind {kind!r}")
    _field(d, "system", str, w, False)
    _strs(d, "offered_tools", w)
    _field(d, "parent_call", str, w, False)


def _close(d: dict[str, Any], w: str) -> None:
    _field(d, "id", str, w)
    _field(d, "result", str, w, False)


def _widen(d: dict[str, Any], w: str) -> None:
    pass  # its payload is the window's to read; the envelope check is all replay needs


def _switch(d: dict[str, Any], w: str) -> None:
    _field(d, "model", str, w)


def _repaired(d: dict[str, Any], w: str) -> None:
    _field(d, "truncated_bytes", int, w)
    _field(d, "offset", int, w)


CHECKS: dict[str, Check] = {
    "session.start": _session,
    "session.resume": _session,
    "user.msg": _user,
    "llm.req": _req,
    "llm.resp": _resp,
    "tool.result": _result,
    "gate.plan": _text,
    "result.fold": _fold,
    "summary.add": _summary,
    "summary.revoke": _revoke,
    "ctx.open": _open,
    "ctx.close": _close,
    "ctx.widen": _widen,
    "model.switch": _switch,
    "log.repaired": _repaired,
    "note": _text,
}


def place(session: str, seq: int, offset: int | None) -> str:
    where = f"session {session} seq {seq}" if session else f"seq {seq}"
    return f"{where} (byte offset {offset})" if offset is not None else where


def check_event(ev: Event, expected_seq: int | None, session: str = "", offset: int | None = None) -> None:
    """Refuse an event replay cannot trust: wrong seq, unknown kind, payload of the wrong shape."""
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
        CHECKS[ev.kind](ev.data, ev.kind)
    except _Bad as exc:
        raise CorruptLogError(f"{here}: {exc}; {fix}") from None
    except CorruptLogError as exc:
        raise CorruptLogError(f"{here}: {exc}; {fix}") from None
    except UnknownRecipeError as exc:  # not damage: a version this nodwyn does not know
        raise UnknownRecipeError(f"{here}: {exc}") from None
    if ev.kind == "llm.resp" and ev.data["req"] >= ev.seq:
        raise CorruptLogError(f"{here}: reply names request seq {ev.data['req']}, not an earlier one; {fix}")
