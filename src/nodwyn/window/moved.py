"""Whether a request is its predecessor's with messages appended, and if not, why (``llm.req``
``moved``). Compared on the render's parts, which the window already holds: no re-encoding."""

from __future__ import annotations

from dataclasses import dataclass

from nodwyn.window.render import _Params


@dataclass(frozen=True, slots=True, kw_only=True)
class _Snapshot:
    """What the last request of a context was: its parts, to tell an extension from a move."""

    params: _Params
    system: bytes
    tools: bytes
    max_output: bytes
    pieces: list[bytes]  # the render's pieces (append-only while its cache lives)
    length: int  # how many of them this request had
    plan: bytes | None  # the trailing plan's piece, if any


def extends(prev: _Snapshot, now: _Snapshot) -> bool:
    """Whether ``now``'s messages are ``prev``'s with messages appended."""
    n = prev.length
    if now.length < n:
        return False
    if now.pieces is not prev.pieces and now.pieces[:n] != prev.pieces[:n]:
        return False
    if prev.plan is None:
        return True
    if now.length > n:  # the trailing plan must be the next message
        return now.pieces[n] == prev.plan
    return now.plan == prev.plan


def moved(prev: _Snapshot | None, now: _Snapshot, trimmed: bool) -> list[str]:
    """Why this request is not its predecessor's with messages appended ([] when it is)."""
    if prev is None:
        return ["first"]
    same_frame = prev.system == now.system and prev.tools == now.tools and prev.max_output == now.max_output
    if same_frame and extends(prev, now):
        return []
    reasons = ["trim"] if trimmed else []
    a, b = prev.params, now.params
    for name, label in (
        ("recipe", "recipe"),
        ("origin", "origin"),
        ("withheld", "images"),
        ("stale", "blocks"),
        ("folds", "fold"),
        ("summaries", "summary"),
        ("version", "context"),
    ):
        if getattr(a, name) != getattr(b, name):
            reasons.append(label)
    if not trimmed and a.elided != b.elided:
        reasons.append("elided")
    if prev.system != now.system:
        reasons.append("system")
    if prev.tools != now.tools:
        reasons.append("tools")
    return reasons or ["messages"]
