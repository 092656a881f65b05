"""Log events: the envelope and the vocabulary of kinds (docs/adr/0003 and 0012).

On disk one event is one JSON line::

    {"seq": 12, "t": "2026-11-29T16:07:29.123456Z", "kind": "llm.req", "ctx": "main", "data": {...}}

``seq`` starts at 1 and grows by one with no gaps. ``ctx`` names the conversation context the
event belongs to: ``"main"`` or the id a ``ctx.open`` event gave a sub-context. ``data`` is the
kind's payload, described by the TypedDicts below (fields marked NotRequired may be absent).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal, NotRequired, TypedDict

MAIN_CTX: Final = "main"

KINDS: Final = frozenset(
    {
        "session.start",
        "session.resume",
        "user.msg",
        "llm.req",
        "llm.resp",
        "tool.result",
        "gate.plan",
        "result.fold",
        "summary.add",
        "summary.revoke",
        "ctx.open",
        "ctx.close",
        "ctx.widen",
        "model.switch",
        "log.repaired",
        "note",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    seq: int
    t: str
    kind: str
    ctx: str
    data: dict[str, Any] = field(hash=False)


# -- payloads ----------------------------------------------------------------------------------


class SessionStart(TypedDict):
    recipe: dict[str, Any]  # values.codec.recipe_to_json
    model: str  # the [control] model's name
    workspace: NotRequired[str]


class SessionResume(TypedDict):
    recipe: dict[str, Any]
    model: str


class ImageRef(TypedDict):
    digest: str
    media_type: str
    width: int
    height: int
    name: NotRequired[str]
    host: NotRequired[str | None]  # the host the person confirmed sending it to


class UserMsg(TypedDict):
    text: str
    images: NotRequired[list[ImageRef]]


class WithheldImage(TypedDict):
    digest: str
    reason: str


class ReqStart(TypedDict):
    seq: int  # window.Start.seq: the first event, read in order from there
    keep: list[int]  # window.Start.keep: earlier events it needs (recipe, open contexts)


class LlmReq(TypedDict):
    model: str  # the model entry's name
    origin: dict[str, Any]  # values.codec.origin_to_json of the target: which blocks it may get back
    digest: str  # values.canonical.digest of the neutral request
    elided: list[int]  # seqs newly elided by this request (sticky from now on)
    estimate: int  # the window's token estimate of the request
    trim: bool  # this request is a trim point (its prefix may move)
    high_water: NotRequired[int]  # the trim line used (headroom requests record the ceiling)
    below_low_blocked: NotRequired[bool]  # protected history kept the estimate above low water
    no_tools: NotRequired[bool]
    offered_tools: NotRequired[list[str]]
    withheld_images: NotRequired[list[WithheldImage]]
    max_output: NotRequired[int]
    headroom: NotRequired[bool]
    moved: NotRequired[list[str]]  # why it is not its predecessor (same ctx) with messages appended
    start: NotRequired[ReqStart]  # where a window rebuilding it may start (replay's seek hint)


class LlmResp(TypedDict):
    req: int  # seq of the llm.req it answers
    response: dict[str, Any]  # values.codec.response_to_json (text, thinking, calls, blocks, usage)


class FileRange(TypedDict):
    start: int
    end: int
    total: int


class ToolResult(TypedDict):
    call_id: str
    name: str
    text: str
    error: bool
    range: NotRequired[FileRange | None]  # fs-read: the file lines it shows


class GatePlan(TypedDict):
    text: str


class ResultFold(TypedDict):
    target: int  # seq of the tool.result folded
    text: str


class SummaryAdd(TypedDict):
    first: int  # first seq of the source span
    last: int  # last seq of the source span
    text: str
    source_digest: str


class SummaryRevoke(TypedDict):
    summary: int  # seq of the summary.add


class CtxOpen(TypedDict):
    id: str
    kind: Literal["narrow", "sub"]
    system: NotRequired[str]  # a narrowing's own system prompt
    offered_tools: NotRequired[list[str]]
    parent_call: NotRequired[str]  # a sub-agent's calling tool call id
    lasting: NotRequired[bool]  # a narrowing that is never widened or closed (compaction)


class CtxClose(TypedDict):
    id: str
    result: NotRequired[str]


class ModelSwitch(TypedDict):
    model: str


class LogRepaired(TypedDict):
    truncated_bytes: int
    offset: int


class Note(TypedDict):
    text: str
