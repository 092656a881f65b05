"""Log events: the envelope and the vocabulary of kinds (docs/adr/0003 and 0012).

On disk one event is one JSON line::

    {"seq": 12, "t": "2026-11-29T16:07:29.123456Z", "kind": "llm.req", "ctx": "main", "data": {...}}

``seq`` starts at 1 and grows by one with no gaps. ``ctx`` names the conversation context the
event belongs to: ``"main"`` or the id a ``ctx.open`` event gave a sub-context. ``data`` is the
kind's payload. Each kind has one frozen class below (``USER_MSG`` -> ``UserMsg`` ...) with one
codec: ``decode(event)`` / ``Cls.from_data(data, where)`` checks every field and raises
``CorruptLogError`` naming it; ``to_data()`` gives the payload back, identical to what was read
(fields this release does not know are kept in ``extra``, so nothing read and written back changes).
An event is written as its payload value (``log.append(UserMsg(text=...), ctx)``): ``encode``
gives the data the log holds, read back through the same codec first, so what the reader would
refuse is refused before anything is written (ADR 0340).
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Literal, Self, TypedDict, TypeVar, cast, get_args

from nodwyn.errors import CanonicalError, CorruptLogError, NodwynError
from nodwyn.values.codec import (
    origin_from_json,
    origin_to_json,
    recipe_from_json,
    recipe_to_json,
    response_from_json,
    response_to_json,
)
from nodwyn.values.content import Origin
from nodwyn.values.fields import NULL, Fields
from nodwyn.values.recipe import Recipe
from nodwyn.values.request import Response

MAIN_CTX: Final = "main"
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    seq: int
    t: str
    kind: str
    ctx: str
    data: dict[str, Any] = field(hash=False)


# -- the kinds ---------------------------------------------------------------------------------

SESSION_START: Final = "session.start"
SESSION_RESUME: Final = "session.resume"
USER_MSG: Final = "user.msg"
LLM_REQ: Final = "llm.req"
LLM_RESP: Final = "llm.resp"
TOOL_RESULT: Final = "tool.result"
GATE_PLAN: Final = "gate.plan"
RESULT_FOLD: Final = "result.fold"
SUMMARY_ADD: Final = "summary.add"
SUMMARY_REVOKE: Final = "summary.revoke"
CTX_OPEN: Final = "ctx.open"
CTX_CLOSE: Final = "ctx.close"
CTX_WIDEN: Final = "ctx.widen"
MODEL_SWITCH: Final = "model.switch"
LOG_REPAIRED: Final = "log.repaired"
NOTE: Final = "note"
LLM_SEEN: Final = "llm.seen"  # a request another agent sent, read from its files (ADR 0280)
IMPORT_VIEW: Final = "import.view"  # a message another agent sent that its conversation does not hold


class FileRange(TypedDict):
    """An fs-read outcome's lines, as tools hand it over (the payload holds a ``LineRange``)."""

    start: int
    end: int
    total: int


# -- reading fields: values.fields, the one field reader ----------------------------------------


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    """An optional field: written only when recorded (None means absent), a tuple as an array."""
    if value is not None:
        out[key] = list(value) if isinstance(value, tuple) else value


def _refs_data(refs: tuple[ImageRef, ...] | None) -> list[dict[str, Any]] | None:
    return None if refs is None else [ref.to_data() for ref in refs]


def _objects(r: Fields, key: str, read: Callable[[Any, str], _T]) -> tuple[_T, ...] | None:
    """An optional array field of objects, each read by ``read`` as ``where.key[i]``."""
    raw = r.get(key, list, None)
    return None if raw is None else tuple(read(v, f"{r.where}.{key}[{i}]") for i, v in enumerate(raw))


# A field of one of these value types is read by its codec's reader and written back as it was read
# (kept in the field ``<name>_json`` beside it), or, for a value made in code, by its writer.
_SHAPES: Final[dict[type, tuple[Callable[[Any, str], Any], Callable[[Any], dict[str, Any]]]]] = {
    Origin: (origin_from_json, origin_to_json),
    Recipe: (recipe_from_json, recipe_to_json),
    Response: (response_from_json, response_to_json),
}
_Declared = tuple[tuple[str, str, Any, Any], ...]
_DECLARED: dict[type, _Declared] = {}


def _declared(cls: type[Payload]) -> _Declared:
    """``(name, how, type, default)`` for each field of a payload class, in order, found once:
    ``how`` is ``plain`` for ``int``, ``str``, ``bool`` and ``dict[...]``, ``array`` for
    ``tuple[X, ...]`` (an array of X), ``shape`` for a value of ``_SHAPES``, ``own`` for a field
    the class reads itself (``_OWN``); ``X | None = None`` is read with the default None."""
    if cls in _DECLARED:
        return _DECLARED[cls]
    hints = typing.get_type_hints(cls)
    out: list[tuple[str, str, Any, Any]] = []
    for f in dataclasses.fields(cls):
        if f.name == "extra" or any(f.name == f"{name}_json" for name, how, _, _ in out if how == "shape"):
            continue
        if f.name in cls._OWN:
            out.append((f.name, "own", None, None))
            continue
        typ = hints[f.name]
        args = typing.get_args(typ)
        optional = type(None) in args
        if optional:
            (typ,) = (a for a in args if a is not type(None))
        base = typing.get_origin(typ) or typ
        how = "shape" if base in _SHAPES else "array" if base is tuple else "plain"
        if how == "array":
            base = typing.get_args(typ)[0]
        if how != "shape" and base not in (int, str, bool, dict):
            raise TypeError(f"{cls.__name__}.{f.name}: {typ} is read by the class itself")
        out.append((f.name, how, base, None if optional else ...))
    _DECLARED[cls] = tuple(out)
    return _DECLARED[cls]


# -- payloads ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Payload:
    """One event kind's payload. ``extra``: fields this release does not read, kept as they were
    (the log's ``_redaction`` report, fields a later release adds) so ``to_data`` gives back what
    was read."""

    KIND: ClassVar[str] = ""
    _OWN: ClassVar[frozenset[str]] = frozenset()  # fields the class reads (``_read``) and writes itself
    extra: dict[str, Any] = field(default_factory=dict, hash=False)

    @classmethod
    def from_data(cls, data: Any, where: str = "") -> Self:
        """The payload read from ``data``; ``CorruptLogError`` naming the field if it is malformed."""
        r = Fields(data, where or cls.KIND)
        return cls._read(r)

    @classmethod
    def _read(cls, r: Fields) -> Self:
        """Each field read as its annotation declares it (``_declared``); a kind with fields of
        another shape (a checked choice, an array of objects) reads those itself (``_OWN``)."""
        return cls(**cls._declared_fields(r), extra=r.extra())

    @classmethod
    def _declared_fields(cls, r: Fields) -> dict[str, Any]:
        """The fields read as declared: every field but the class's own (``_OWN``)."""
        out: dict[str, Any] = {}
        for name, how, typ, default in _declared(cls):
            if how == "plain":
                out[name] = r.get(name, typ, default)
            elif how == "array":
                out[name] = r.items(name, typ, default)
            elif how == "shape":
                raw = out[f"{name}_json"] = r.get(name, dict, default)
                out[name] = None if raw is None else _SHAPES[typ][0](raw, f"{r.where}.{name}")
        return out

    def _data(self, name: str) -> Any:
        """Field ``name`` of the class's own (``_OWN``) as the log holds it (None: absent)."""
        return getattr(self, name)

    def _fields(self) -> dict[str, Any]:
        """The fields in their order, an optional one only when recorded (None: absent)."""
        out: dict[str, Any] = {}
        for name, how, typ, _ in _declared(type(self)):
            value = getattr(self, name) if how != "own" else self._data(name)
            if how == "shape" and value is not None:
                raw = getattr(self, f"{name}_json")
                value = raw if raw is not None else _SHAPES[typ][1](value)
            if value is not None:  # as _put writes it
                out[name] = list(value) if isinstance(value, tuple) else value
        return out

    def to_data(self) -> dict[str, Any]:
        """The payload as the log holds it."""
        return {**self.extra, **self._fields()}


@dataclass(frozen=True, slots=True, kw_only=True)
class Bookkeeping(Payload):
    """The kinds that carry no message of the conversation: contexts opened, closed and widened,
    folds, summaries and their revocations, model switches, repairs of the log (ADR 0480). A
    dispatch that treats them alike names this one class; a new kind is a class of its own, so
    ``assert_never`` still finds every dispatch that misses it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Observed(Payload):
    """The kinds only an imported session holds: the requests another agent sent (``llm.seen``)
    and the messages it sent as it wrote them (``import.view``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _RecipePayload(Payload):
    """The recipe in force from here on, and the [control] model. ``recipe`` None: a legacy
    session (written before recipes were recorded), refused by exact replay as such.
    ``recipe_json``: the recipe as recorded, written back as it was."""

    recipe: Recipe | None
    model: str
    workspace: str | None = None
    recipe_json: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    sandbox: str | None = None  # the shell's sandbox mode from here on (None: before sandboxes)
    network: bool | None = None  # whether the sandbox lets the network through
    approval: str | None = None  # ask | auto-edit | full-auto


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStart(_RecipePayload):
    KIND: ClassVar[str] = SESSION_START


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionResume(_RecipePayload):
    KIND: ClassVar[str] = SESSION_RESUME


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageRef:
    """An attached image: its attachment digest, and the host the person confirmed sending it to
    (None: written before hosts were recorded, or recorded as null when ``host_null``)."""

    digest: str
    media_type: str
    width: int
    height: int
    name: str | None = None
    host: str | None = None
    host_null: bool = False
    extra: dict[str, Any] = field(default_factory=dict, hash=False)

    @classmethod
    def from_data(cls, data: Any, where: str) -> ImageRef:
        r = Fields(data, where)
        host = r.get("host", (str, NULL), None)
        ref = cls(
            digest=r.get("digest", str),
            media_type=r.get("media_type", str),
            width=r.get("width", int),
            height=r.get("height", int),
            name=r.get("name", str, None),
            host=host,
            host_null=host is None and r.has("host"),
            extra=r.extra(),
        )
        if ref.width <= 0 or ref.height <= 0:
            raise CorruptLogError(f"{where}: width and height must be positive")
        return ref

    @property
    def shown_name(self) -> str:
        """The name shown for it: its file name, or the start of its digest."""
        return self.name if self.name is not None else self.digest[:19]

    def to_data(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            **self.extra,
            "digest": self.digest,
            "media_type": self.media_type,
            "width": self.width,
            "height": self.height,
        }
        _put(out, "name", self.name)
        if self.host is not None or self.host_null:
            out["host"] = self.host
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMsg(Payload):
    KIND: ClassVar[str] = USER_MSG
    text: str
    images: tuple[ImageRef, ...] | None = None
    _OWN: ClassVar[frozenset[str]] = frozenset({"images"})

    @classmethod
    def _read(cls, r: Fields) -> Self:
        plain = cls._declared_fields(r)
        return cls(**plain, images=_objects(r, "images", ImageRef.from_data), extra=r.extra())

    def _data(self, name: str) -> Any:
        return _refs_data(self.images)


@dataclass(frozen=True, slots=True, kw_only=True)
class WithheldImage:
    digest: str
    reason: str

    @classmethod
    def from_data(cls, data: Any, where: str) -> WithheldImage:
        r = Fields(data, where)
        return cls(digest=r.get("digest", str), reason=r.get("reason", str))


@dataclass(frozen=True, slots=True, kw_only=True)
class ReqStart:
    """Where a window rebuilding the request may start: the first seq, read in order from there,
    and the earlier events it keeps (recipe, open contexts). Replay's and resume's seek hint."""

    seq: int
    keep: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class LlmReq(Payload):
    """A request: what the window decided (``elided`` newly sticky, ``estimate``, ``trim``, ...)
    and the digest of the neutral request sent. ``digest`` None: a legacy request, refused by
    exact replay as such."""

    KIND: ClassVar[str] = LLM_REQ
    model: str
    origin: Origin
    digest: str | None = None
    elided: tuple[int, ...] = ()
    estimate: int = 0
    trim: bool = False
    high_water: int | None = None
    below_low_blocked: bool | None = None
    target: int | None = None
    head: int | None = None
    no_tools: bool | None = None
    offered_tools: tuple[str, ...] | None = None
    withheld_images: tuple[WithheldImage, ...] | None = None
    max_output: int | None = None
    headroom: bool | None = None
    moved: tuple[str, ...] | None = None
    start: ReqStart | None = None
    cache_ask: str | None = None
    origin_json: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    _OWN: ClassVar[frozenset[str]] = frozenset({"withheld_images", "start"})

    @classmethod
    def _read(cls, r: Fields) -> Self:
        plain = cls._declared_fields(r)
        digest = plain["digest"]
        if digest is not None and not _DIGEST.fullmatch(digest):
            raise CorruptLogError(
                f"{r.where}.digest: {digest[:80]!r} is not 'sha256:' and 64 lowercase hex digits"
            )
        held = _objects(r, "withheld_images", WithheldImage.from_data)
        raw_start = r.get("start", dict, None)
        start = None
        if raw_start is not None:
            sr = Fields(raw_start, f"{r.where}.start")
            start = ReqStart(seq=sr.get("seq", int), keep=sr.items("keep", int, ...) or ())
        return cls(**plain, withheld_images=held, start=start, extra=r.extra())

    def _data(self, name: str) -> Any:
        if name == "start":
            return None if self.start is None else {"seq": self.start.seq, "keep": list(self.start.keep)}
        held = self.withheld_images
        return None if held is None else [{"digest": h.digest, "reason": h.reason} for h in held]


@dataclass(frozen=True, slots=True, kw_only=True)
class LlmResp(Payload):
    KIND: ClassVar[str] = LLM_RESP
    req: int  # seq of the llm.req it answers
    response: Response
    response_json: dict[str, Any] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class LineRange:
    start: int
    end: int
    total: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult(Payload):
    """A tool's outcome. ``range``: the file lines an fs-read shows (``range_null``: recorded as
    null)."""

    KIND: ClassVar[str] = TOOL_RESULT
    call_id: str
    name: str
    text: str
    error: bool
    range: LineRange | None = None
    range_null: bool = False
    sandbox: str | None = None  # shell: the sandbox mode it ran under (None: before sandboxes)
    images: tuple[ImageRef, ...] | None = None  # the images it returned (an MCP tool's), by digest
    _OWN: ClassVar[frozenset[str]] = frozenset({"range", "range_null", "images"})

    @classmethod
    def _read(cls, r: Fields) -> Self:
        images = _objects(r, "images", ImageRef.from_data)
        plain = cls._declared_fields(r)
        raw = r.get("range", (dict, NULL), None)
        rng = None
        if raw is not None:
            rr = Fields(raw, f"{r.where}.range")
            rng = LineRange(start=rr.get("start", int), end=rr.get("end", int), total=rr.get("total", int))
        range_null = rng is None and r.has("range")
        return cls(**plain, range=rng, range_null=range_null, images=images, extra=r.extra())

    def _fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "call_id": self.call_id,
            "name": self.name,
            "text": self.text,
            "error": self.error,
        }
        if self.range is not None:
            out["range"] = {"start": self.range.start, "end": self.range.end, "total": self.range.total}
        elif self.range_null:
            out["range"] = None
        _put(out, "sandbox", self.sandbox)
        _put(out, "images", _refs_data(self.images))
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class _TextPayload(Payload):
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class GatePlan(_TextPayload):
    """A plan the person approved at the gate."""

    KIND: ClassVar[str] = GATE_PLAN


@dataclass(frozen=True, slots=True, kw_only=True)
class Note(_TextPayload):
    KIND: ClassVar[str] = NOTE


@dataclass(frozen=True, slots=True, kw_only=True)
class ResultFold(Bookkeeping):
    KIND: ClassVar[str] = RESULT_FOLD
    target: int  # seq of the tool.result folded
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryAdd(Bookkeeping):
    KIND: ClassVar[str] = SUMMARY_ADD
    first: int  # first seq of the source span
    last: int  # last seq of the source span
    text: str
    source_digest: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryRevoke(Bookkeeping):
    KIND: ClassVar[str] = SUMMARY_REVOKE
    summary: int  # seq of the summary.add


@dataclass(frozen=True, slots=True, kw_only=True)
class CtxOpen(Bookkeeping):
    KIND: ClassVar[str] = CTX_OPEN
    id: str
    kind: Literal["narrow", "sub"]
    system: str | None = None  # a narrowing's own system prompt
    offered_tools: tuple[str, ...] | None = None
    parent_call: str | None = None  # a sub-agent's calling tool call id
    lasting: bool | None = None  # a narrowing that is never widened or closed (compaction)
    _OWN: ClassVar[frozenset[str]] = frozenset({"kind"})

    @classmethod
    def _read(cls, r: Fields) -> Self:
        plain = cls._declared_fields(r)
        kind = r.get("kind", str)
        if kind not in ("narrow", "sub"):
            raise CorruptLogError(f"{r.where}.kind: unknown context kind {kind!r} (narrow or sub)")
        return cls(**plain, kind=cast(Literal["narrow", "sub"], kind), extra=r.extra())


@dataclass(frozen=True, slots=True, kw_only=True)
class CtxClose(Bookkeeping):
    KIND: ClassVar[str] = CTX_CLOSE
    id: str
    result: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CtxWiden(Bookkeeping):
    """A narrowing ends and its conversation joins its parent's (the window checks the id names
    an open narrowing)."""

    KIND: ClassVar[str] = CTX_WIDEN
    id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSwitch(Bookkeeping):
    """The model entry later requests go to. ``recipe``: the recipe in force from here on when the
    switch resized the window to the new model's context (ADR 0300); None (every switch recorded
    before, and one to a model of the same context) keeps the recipe as it was."""

    KIND: ClassVar[str] = MODEL_SWITCH
    model: str
    recipe: Recipe | None = None
    recipe_json: dict[str, Any] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class LogRepaired(Bookkeeping):
    KIND: ClassVar[str] = LOG_REPAIRED
    truncated_bytes: int
    offset: int


# One item of an observed request's messages: the seq of one message event, or an inclusive range
# of seqs whose message events (user.msg, llm.resp, tool.result, import.view) it holds in order.
SeenItem = int | tuple[int, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class LlmSeen(Observed):
    """A request another agent sent, as its own files record it (``nodwyn import``; ADR 0280).
    nodwyn did not build it, so it has no digest and exact replay does not claim it: it is read
    back, not rebuilt. ``messages``: the events it held, in order (system prompt and tools are the
    session's recipe's); ``why``: what the agent did since its previous request that changed what
    it sent (``"compaction"``, ``"condensation"``, ...), as the source records it."""

    KIND: ClassVar[str] = LLM_SEEN
    model: str
    messages: tuple[SeenItem, ...]
    why: tuple[str, ...] | None = None
    _OWN: ClassVar[frozenset[str]] = frozenset({"messages"})

    @classmethod
    def _read(cls, r: Fields) -> Self:
        model = r.get("model", str)
        items: list[SeenItem] = []
        for i, v in enumerate(r.get("messages", list)):
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                items.append(v)
            elif (
                isinstance(v, list)
                and len(v) == 2
                and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in v)
                and v[0] <= v[1]
            ):
                items.append((v[0], v[1]))
            else:
                raise CorruptLogError(
                    f"{r.where}.messages[{i}]: expected a seq or a [first, last] range of seqs"
                )
        return cls(model=model, messages=tuple(items), why=r.items("why", str), extra=r.extra())

    def _data(self, name: str) -> Any:
        return [list(v) if isinstance(v, tuple) else v for v in self.messages]


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportView(Observed):
    """A message another agent sent in place of part of its conversation (a summary, a masked
    observation), logged once and named by the ``llm.seen`` requests that held it. ``why`` says
    what made it; ``of`` lists the message events it stands for, when the source tells."""

    KIND: ClassVar[str] = IMPORT_VIEW
    message: dict[str, Any]
    why: str
    of: tuple[int, ...] | None = None


# Every payload class, declared once. Dispatch that must handle each kind matches over it
# (``decode``'s result) and ends in ``assert_never``, so a new kind added here is a type error in
# every dispatch that misses it, not skipped in silence (ADR 0415).
AnyPayload = (
    SessionStart
    | SessionResume
    | UserMsg
    | LlmReq
    | LlmResp
    | ToolResult
    | GatePlan
    | ResultFold
    | SummaryAdd
    | SummaryRevoke
    | CtxOpen
    | CtxClose
    | CtxWiden
    | ModelSwitch
    | LogRepaired
    | Note
    | LlmSeen
    | ImportView
)

PAYLOADS: Final[dict[str, type[AnyPayload]]] = {cls.KIND: cls for cls in get_args(AnyPayload)}

KINDS: Final = frozenset(PAYLOADS)  # every kind this release reads: one class per kind, named once

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def decode(event: Event) -> AnyPayload:
    """The event's typed payload; ``CorruptLogError`` naming the kind, seq and field if malformed."""
    cls = PAYLOADS.get(event.kind)
    if cls is None:
        raise CorruptLogError(f"seq {event.seq}: unknown event kind {event.kind!r}")
    return cls.from_data(event.data, f"{event.kind} at seq {event.seq}")


def encode(payload: Payload) -> dict[str, Any]:
    """The data the log holds for ``payload``, read back through the codec first: a payload the
    codec refuses, or one whose data reads back as other data (a field the codec drops), raises
    ``CanonicalError`` naming the field, before anything is written (ADR 0340)."""
    cls = type(payload)
    if PAYLOADS.get(cls.KIND) is not cls:
        raise CanonicalError(f"{cls.__name__} is not an event payload of values.events; nothing was written")
    data = payload.to_data()
    try:
        back = cls.from_data(data, cls.KIND).to_data()
    except CorruptLogError as exc:
        raise CanonicalError(f"{exc}; the payload was refused, nothing was written") from None
    if back != data:
        fields = sorted(k for k in data.keys() | back.keys() if data.get(k, ...) != back.get(k, ...))
        raise CanonicalError(
            f"{cls.KIND}: the payload does not read back as written (field {', '.join(fields)}); "
            "nothing was written"
        )
    return data


def decoded(event: Event, *kinds: str) -> AnyPayload | None:
    """The typed payload of an event of one of ``kinds`` (any kind if none given), or None if it
    is of another kind or does not decode: for readers that show damaged logs instead of refusing."""
    if kinds and event.kind not in kinds:
        return None
    try:
        return decode(event)
    except NodwynError:  # damaged, or a recipe version this release does not know
        return None
