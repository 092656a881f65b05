"""Conversation entries: the events a window can show, parsed and validated once when fed.

``user.msg`` -> a person's message (with its images), ``llm.resp`` -> a reply, ``tool.result`` ->
a result, ``gate.plan`` -> a plan, and a narrowing's ``ctx.close`` result -> a closing note. Each
entry keeps its seq, which names it in elision markers and in the sticky elided set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from nodwyn.errors import CorruptLogError
from nodwyn.values.codec import response_from_json
from nodwyn.values.events import Event
from nodwyn.values.request import Response
from nodwyn.window.images import Image

EntryKind = Literal["user", "assistant", "result", "plan", "closed"]
_EMPTY = Response()


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    seq: int
    ctx: str
    kind: EntryKind
    text: str = ""
    images: tuple[Image, ...] = ()
    reply: Response = _EMPTY
    call_id: str = ""
    name: str = ""
    error: bool = False
    range_start: int | None = None
    has_range: bool = False
    header: str | None = None  # a person's message or plan: its header under the recipe in force then


def _field(event: Event, key: str, typ: type, default: Any = ...) -> Any:
    data = event.data
    if key not in data:
        if default is ...:
            raise CorruptLogError(f"{event.kind} at seq {event.seq}: missing field {key!r}")
        return default
    value = data[key]
    if (typ is int and isinstance(value, bool)) or not isinstance(value, typ):
        raise CorruptLogError(
            f"{event.kind} at seq {event.seq}: field {key!r} should be {typ.__name__}, "
            f"got {type(value).__name__}"
        )
    return value


def _images(event: Event) -> tuple[Image, ...]:
    raw = _field(event, "images", list, [])
    images = []
    for i, ref in enumerate(raw):
        where = f"user.msg at seq {event.seq}: images[{i}]"
        if not isinstance(ref, dict):
            raise CorruptLogError(f"{where} is not an object")
        try:
            digest, media_type, width, height = ref["digest"], ref["media_type"], ref["width"], ref["height"]
        except KeyError as exc:
            raise CorruptLogError(f"{where}: missing field {exc.args[0]!r}") from None
        name = ref.get("name", digest[:19] if isinstance(digest, str) else "")
        if not (
            isinstance(digest, str)
            and isinstance(media_type, str)
            and isinstance(name, str)
            and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (width, height))
        ):
            raise CorruptLogError(f"{where}: digest/media_type/name must be strings, width/height positive")
        images.append(Image(digest=digest, media_type=media_type, width=width, height=height, name=name))
    return tuple(images)


def entry_of(event: Event) -> Entry | None:
    """The entry an event adds to its context's conversation, or None."""
    kind = event.kind
    if kind == "user.msg":
        return Entry(
            seq=event.seq, ctx=event.ctx, kind="user", text=_field(event, "text", str), images=_images(event)
        )
    if kind == "llm.resp":
        response = response_from_json(_field(event, "response", dict), f"llm.resp at seq {event.seq}")
        return Entry(seq=event.seq, ctx=event.ctx, kind="assistant", reply=response)
    if kind == "tool.result":
        rng = event.data.get("range")
        start: int | None = None
        if rng is not None:
            if not isinstance(rng, dict) or not isinstance(rng.get("start"), int):
                raise CorruptLogError(f"tool.result at seq {event.seq}: range must be {{start, end, total}}")
            start = rng["start"]
        return Entry(
            seq=event.seq,
            ctx=event.ctx,
            kind="result",
            call_id=_field(event, "call_id", str),
            name=_field(event, "name", str),
            text=_field(event, "text", str),
            error=_field(event, "error", bool, False),
            range_start=start,
            has_range=rng is not None,
        )
    if kind == "gate.plan":
        return Entry(seq=event.seq, ctx=event.ctx, kind="plan", text=_field(event, "text", str))
    return None
