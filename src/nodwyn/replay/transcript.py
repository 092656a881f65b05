"""Transcript replay: the conversation of any log as a person reads it.

Unlike exact replay this never refuses a log: a legacy request or session is shown with a ``?``
note, and a payload that does not decode (a damaged log, a recipe version this release does not
know) is shown as the codec's reason and its fields as recorded, so old and damaged logs stay
readable. It renders only what the log holds; it builds no request and verifies nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, assert_never

from nodwyn.errors import NodwynError
from nodwyn.log import CTX_ID
from nodwyn.values.events import (
    PAYLOADS,
    USER_MSG,
    AnyPayload,
    CtxClose,
    CtxOpen,
    CtxWiden,
    Event,
    GatePlan,
    ImportView,
    LlmReq,
    LlmResp,
    LlmSeen,
    LogRepaired,
    ModelSwitch,
    Note,
    Observed,
    ResultFold,
    SessionResume,
    SessionStart,
    SummaryAdd,
    SummaryRevoke,
    ToolResult,
    UserMsg,
    decode,
    decoded,
)
from nodwyn.values.recipe import Recipe

_INDENT = "    "


@dataclass(frozen=True, slots=True, kw_only=True)
class Damaged:
    """A line of the log that is not a whole event, found by a tolerant reading (``tolerant.py``)."""

    offset: int  # byte offset of the line in log.jsonl
    size: int
    reason: str
    torn: bool = False  # bytes after the last newline: a torn write, or one in progress


def _s(value: Any) -> str:
    """A value as text, whatever its type (a damaged payload holds anything)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return repr(value)


def _block(label: str, text: str) -> list[str]:
    """``label: first line`` then the following lines indented under it."""
    lines = text.splitlines() or [""]
    out = [f"{_INDENT}{label}: {lines[0]}" if label else f"{_INDENT}{lines[0]}"]
    pad = _INDENT + " " * (len(label) + 2 if label else 0)
    out.extend(pad + line for line in lines[1:])
    return out


def _recipe_line(recipe: Recipe) -> str:
    lim = recipe.limits
    parts = [
        f"window-v{recipe.version}",
        f"context {recipe.context_size}",
        f"high water {lim.high_water}",
        f"low water {lim.low_water}",
        f"result cap {lim.max_result_tokens}",
        f"output reserve {lim.output_reserve}",
    ]
    if recipe.keep_alive is not None:
        parts.append(f"keep-alive {recipe.keep_alive}")
    tools = [t.name for t in recipe.tools]
    return f"{', '.join(parts)}; tools: {', '.join(tools) if tools else '(none)'}"


def _session(p: SessionStart | SessionResume, verb: str) -> list[str]:
    lines = [f"{verb} with model {p.model}"]
    if p.recipe is not None:
        lines.append(f"{_INDENT}recipe {_recipe_line(p.recipe)}")
        lines.extend(_block("system", p.recipe.system))
    else:
        lines.append(f"{_INDENT}? no recipe recorded (a legacy session: exact replay refuses it)")
    if p.workspace is not None:
        lines.append(f"{_INDENT}workspace {p.workspace}")
    return lines


def _user(p: UserMsg) -> list[str]:
    lines = ["person:", *_block("", p.text)]
    for img in p.images or ():
        name = img.name or img.digest
        lines.append(f"{_INDENT}[image {name} {img.media_type} {img.width}x{img.height}]")
    return lines


def _request(p: LlmReq) -> list[str]:
    facts = [f"to {p.model}", f"estimate {p.estimate} tokens"]
    if p.trim:
        facts.append("trim point" if p.high_water is None else f"trim point (high water {p.high_water})")
    elif p.high_water is not None:
        facts.append(f"high water {p.high_water}")
    if p.headroom:
        facts.append("headroom")
    if p.no_tools:
        facts.append("no tools")
    if p.offered_tools is not None:
        facts.append("tools " + ", ".join(p.offered_tools))
    if p.max_output is not None:
        facts.append(f"max output {p.max_output}")
    lines = ["request " + ", ".join(facts)]
    moved = [m for m in p.moved or () if m != "first"]
    if moved:
        lines.append(f"{_INDENT}prefix moved: " + ", ".join(moved))
    if p.elided:
        lines.append(f"{_INDENT}elided " + ", ".join(f"#{s}" for s in p.elided))
    for w in p.withheld_images or ():
        lines.append(f"{_INDENT}withheld image {w.digest}: {w.reason}")
    if p.digest is None:
        lines.append(f"{_INDENT}? no digest recorded (legacy request: exact replay refuses it)")
    else:
        lines.append(f"{_INDENT}digest {p.digest}")
    return lines


def _reply(p: LlmResp) -> list[str]:
    r = p.response
    lines = [f"reply to #{p.req}" + (f" ({r.finish})" if r.finish else "")]
    if r.thinking:
        lines.extend(_block("thinking", r.thinking))
    if r.blocks:
        lines.append(f"{_INDENT}reasoning blocks: " + ", ".join(b.type for b in r.blocks))
    if r.text:
        lines.extend(_block("text", r.text))
    for c in r.calls:
        lines.extend(_block(f"call {c.name} [{c.id}]", c.arguments))
    u = r.usage
    counts = (
        ("prompt", u.prompt_tokens),
        ("cached", u.cached_tokens),
        ("cache_write", u.cache_write_tokens),
        ("output", u.output_tokens),
        ("reasoning", u.reasoning_tokens),
    )
    shown = [f"{name} {n}" for name, n in counts if n is not None]
    if shown:
        lines.append(f"{_INDENT}usage: " + ", ".join(shown))
    return lines


def _result(p: ToolResult) -> list[str]:
    head = f"result of {p.name} [{p.call_id}]"
    if p.error:
        head += " (error)"
    if p.range is not None:
        head += f" lines {p.range.start}-{p.range.end} of {p.range.total}"
    return [head, *_block("", p.text)]


def _seen(p: LlmSeen) -> list[str]:
    """A request another agent sent (an imported session): read back, never rebuilt."""
    held = ", ".join(f"#{m}" if isinstance(m, int) else f"#{m[0]}..#{m[1]}" for m in p.messages)
    lines = [f"observed request to {p.model}", f"{_INDENT}held {held or '(no messages)'}"]
    if p.why:
        lines.append(f"{_INDENT}since the previous request: " + ", ".join(p.why))
    lines.append(f"{_INDENT}? not built by nodwyn (an imported session): exact replay does not claim it")
    return lines


def _body(ev: Event, p: AnyPayload) -> list[str]:
    """The lines of a decoded event, without its ``#SEQ [ctx]`` head."""
    match p:
        case SessionStart():
            return _session(p, "session started")
        case SessionResume():
            return _session(p, "session resumed")
        case UserMsg():
            return _user(p)
        case LlmReq():
            return _request(p)
        case LlmResp():
            return _reply(p)
        case ToolResult():
            return _result(p)
        case GatePlan():
            return ["plan:", *_block("", p.text)]
        case ResultFold():
            return [f"fold of result #{p.target}:", *_block("", p.text)]
        case SummaryAdd():
            head = f"summary of #{p.first}..#{p.last} (source {p.source_digest}):"
            return [head, *_block("", p.text)]
        case SummaryRevoke():
            return [f"summary #{p.summary} revoked"]
        case CtxOpen():
            system = _block("system", p.system) if p.system is not None else []
            return [f"context {p.id} opened ({p.kind})", *system]
        case CtxClose():
            result = _block("result", p.result) if p.result is not None else []
            return [f"context {p.id} closed", *result]
        case CtxWiden():
            return [f"context widened: {_s(ev.data)}"]  # its fields as recorded
        case ModelSwitch():
            return [f"model switched to {p.model}"]
        case LogRepaired():
            return [f"log repaired: {p.truncated_bytes} torn bytes cut at offset {p.offset}"]
        case Note():
            return ["note:", *_block("", p.text)]
        case LlmSeen():
            return _seen(p)
        case ImportView():
            of = f" in place of {', '.join(f'#{s}' for s in p.of)}" if p.of else ""
            message = json.dumps(p.message, ensure_ascii=False)  # as the other agent wrote it
            return [f"message the imported agent sent ({p.why}){of}:", *_block("", message)]
        case _:
            assert_never(p)


# What a person calls each kind of event (the console's transcript and the Markdown export).
LABELS = {
    SessionStart.KIND: "session started",
    SessionResume.KIND: "session resumed",
    UserMsg.KIND: "person",
    LlmReq.KIND: "request",
    LlmResp.KIND: "reply",
    ToolResult.KIND: "tool result",
    GatePlan.KIND: "plan",
    ResultFold.KIND: "tool result folded",
    SummaryAdd.KIND: "summary",
    SummaryRevoke.KIND: "summary withdrawn",
    CtxOpen.KIND: "context opened",
    CtxClose.KIND: "context closed",
    CtxWiden.KIND: "context widened",
    ModelSwitch.KIND: "model switched",
    Note.KIND: "note",
    LogRepaired.KIND: "log repaired",
    LlmSeen.KIND: "observed request",
    ImportView.KIND: "imported message",
}


def label(kind: str) -> str:
    return LABELS.get(kind, kind)


def in_words(ev: Event) -> str | None:
    """A sentence for the bookkeeping events (contexts, folds, summaries, switches, repairs) as a
    person would say it, instead of their fields; None for the kinds shown by their own text and
    for a payload that does not decode."""
    p = decoded(ev)
    match p:
        case CtxOpen(kind="sub"):
            tools = f" with the tools {', '.join(p.offered_tools)}" if p.offered_tools else ""
            return f"A sub-agent started ({p.id}){tools}."
        case CtxOpen(lasting=True):
            return (
                "The conversation was compacted: later requests start from the note the model wrote; "
                "the earlier conversation stays in the log."
            )
        case CtxOpen():
            hidden = "what came before is hidden until it ends"
            return f"The conversation narrowed to a side task ({p.id}); {hidden}."
        case CtxClose():
            follows = ": its answer follows." if p.result is not None else "."
            return f"The side conversation {p.id} ended{follows}"
        case CtxWiden():
            return f"The side conversation {p.id} ended and joined the conversation it came from."
        case ResultFold():
            return f"The tool result at #{p.target} was replaced by a short note to save room."
        case SummaryAdd():
            return f"Events #{p.first} to #{p.last} are shown to the model as a summary."
        case SummaryRevoke():
            return f"The summary at #{p.summary} was withdrawn; the events it stood for are shown again."
        case ModelSwitch():
            return f"Switched to the model {p.model}."
        case LogRepaired():
            return (
                f"A torn last line ({p.truncated_bytes} bytes, from a run that stopped mid-write) "
                "was cut when the session was opened again."
            )
        case (
            SessionStart()
            | SessionResume()
            | UserMsg()
            | LlmReq()
            | LlmResp()
            | ToolResult()
            | GatePlan()
            | Note()
            | Observed()
            | None
        ):
            return None  # shown by their own text; None: the payload does not decode
        case _:
            assert_never(p)


def render_event(ev: Event) -> list[str]:
    """The lines of one event: ``#SEQ [ctx] first line`` then indented detail."""
    if ev.kind not in PAYLOADS:
        body = [f"? unknown event kind {ev.kind!r}: {_s(ev.data)}"]
    else:
        try:
            body = _body(ev, decode(ev))
        except NodwynError as exc:  # damaged, or a recipe version this release does not know
            body = [f"? the payload does not decode: {exc}", f"{_INDENT}as recorded: {_s(ev.data)}"]
    ctx = ev.ctx if isinstance(ev.ctx, str) and CTX_ID.fullmatch(ev.ctx) else repr(ev.ctx)
    where = "" if ctx == "main" else f" [{ctx}]"
    return [f"#{ev.seq}{where} {body[0]}", *body[1:]]


def transcript_lines(events: Iterable[Event | Damaged]) -> Iterator[str]:
    """Every event's lines, with a blank line before each person's message; damage noted in place."""
    first = True
    for ev in events:
        if isinstance(ev, Damaged):
            what = "torn tail" if ev.torn else "damaged line"
            yield f"!! {what} at byte {ev.offset} ({ev.size} bytes): {ev.reason}"
            continue
        if ev.kind == USER_MSG and not first:
            yield ""
        first = False
        yield from render_event(ev)


def transcript_json(ev: Event) -> dict[str, Any]:
    """One event as a JSON transcript entry: the envelope plus its rendered text."""
    return {"seq": ev.seq, "t": ev.t, "kind": ev.kind, "ctx": ev.ctx, "text": "\n".join(render_event(ev))}
