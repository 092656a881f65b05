"""Conversation entries: the events a window can show, decoded (``values.events``) once when fed.

``user.msg`` -> a person's message (with its images), ``llm.resp`` -> a reply, ``tool.result`` ->
a result, ``gate.plan`` -> a plan, and a narrowing's ``ctx.close`` result -> a closing note. Each
entry keeps its seq, which names it in elision markers and in the sticky elided set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, TypeVar, assert_never

from nodwyn.values.events import (
    GATE_PLAN,
    LLM_RESP,
    TOOL_RESULT,
    USER_MSG,
    Bookkeeping,
    Event,
    GatePlan,
    LlmReq,
    LlmResp,
    Note,
    Observed,
    Payload,
    SessionResume,
    SessionStart,
    ToolResult,
    UserMsg,
    decode,
)
from nodwyn.values.request import Response
from nodwyn.window.images import _Image

_EntryKind = Literal["user", "assistant", "result", "plan", "closed"]
P = TypeVar("P", bound=Payload)
_EMPTY = Response()
_SHOWN: Final = frozenset({USER_MSG, LLM_RESP, TOOL_RESULT, GATE_PLAN})


@dataclass(frozen=True, slots=True, kw_only=True)
class _Entry:
    seq: int
    ctx: str
    kind: _EntryKind
    text: str = ""
    images: tuple[_Image, ...] = ()
    reply: Response = _EMPTY
    call_id: str = ""
    name: str = ""
    error: bool = False
    range_start: int | None = None
    has_range: bool = False
    header: str | None = None  # a person's message or plan: its header under the recipe in force then


def _payload_of(event: Event, cls: type[P]) -> P:
    """The event's payload read as ``cls`` (its kind's class): ``decode`` with the class known, so
    the window's handlers read typed fields and the codec alone checks them."""
    return cls.from_data(event.data, f"{event.kind} at seq {event.seq}")


def _images(msg: UserMsg | ToolResult) -> tuple[_Image, ...]:
    return tuple(
        _Image(digest=r.digest, media_type=r.media_type, width=r.width, height=r.height, name=r.shown_name)
        for r in msg.images or ()
    )


def _entry_of(event: Event) -> _Entry | None:
    """The entry an event adds to its context's conversation, or None."""
    if event.kind not in _SHOWN:
        return None
    p = decode(event)
    match p:
        case UserMsg():
            return _Entry(seq=event.seq, ctx=event.ctx, kind="user", text=p.text, images=_images(p))
        case LlmResp():
            return _Entry(seq=event.seq, ctx=event.ctx, kind="assistant", reply=p.response)
        case ToolResult():
            return _Entry(
                seq=event.seq,
                ctx=event.ctx,
                kind="result",
                call_id=p.call_id,
                name=p.name,
                text=p.text,
                error=p.error,
                range_start=None if p.range is None else p.range.start,
                has_range=p.range is not None,
                images=_images(p),
            )
        case GatePlan():
            return _Entry(seq=event.seq, ctx=event.ctx, kind="plan", text=p.text)
        case SessionStart() | SessionResume() | LlmReq() | Note() | Bookkeeping() | Observed():
            return None  # not in _SHOWN: the fold handles them, or the window shows none of them
        case _:
            assert_never(p)
