"""JSON shapes the console's pages read. Reasoning blocks never leave the server: a reply's
``blocks`` (signed thinking, encrypted reasoning, reasoning_details) are counted, not shown."""

from __future__ import annotations

from typing import Any, assert_never

from nodwyn.replay import in_words, label
from nodwyn.values.codec import usage_to_json
from nodwyn.values.content import AssistantMessage, ImagePart, TextPart, ToolMessage, UserMessage
from nodwyn.values.events import (
    Bookkeeping,
    CtxClose,
    Event,
    GatePlan,
    LlmReq,
    LlmResp,
    Note,
    Observed,
    ResultFold,
    SessionResume,
    SessionStart,
    ToolResult,
    UserMsg,
    decoded,
)
from nodwyn.values.request import Request, Response

# A transcript entry shows at most this many characters of one text; the rest is counted.
TEXT_LIMIT = 4000


def clip(text: str, limit: int = TEXT_LIMIT) -> dict[str, Any]:
    if len(text) <= limit:
        return {"text": text, "more": 0}
    return {"text": text[:limit], "more": len(text) - limit}


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else repr(value))


def _said(m: Response | AssistantMessage) -> dict[str, Any]:
    """A reply's text and thinking clipped, its calls' arguments too; its blocks counted only."""
    calls = [{"name": c.name, **clip(c.arguments, 600)} for c in m.calls]
    return {**clip(m.text), "thinking": clip(m.thinking), "calls": calls, "blocks": len(m.blocks)}


def event_json(e: Event) -> dict[str, Any]:
    """One transcript entry: what a person reads of the event, clipped, never reasoning blocks.
    A payload that does not decode (a damaged log) shows its fields as they are."""
    data = _d(e.data)
    out: dict[str, Any] = {"seq": e.seq, "t": e.t, "kind": e.kind, "label": label(e.kind), "ctx": e.ctx}
    p = decoded(e)
    match p:
        case UserMsg():
            out.update(clip(p.text))
            out["images"] = len(p.images or ())
        case LlmResp():
            resp = p.response
            out.update(req=p.req, **_said(resp))
            recorded = isinstance(_d(data.get("response")).get("usage"), dict)
            out["usage"] = usage_to_json(resp.usage) if recorded else None
        case LlmReq():
            out.update(model=p.model, trim=p.trim, estimate=p.estimate, elided=len(p.elided))
        case ToolResult():
            out.update(name=p.name, error=p.error, **clip(p.text))
            if p.sandbox is not None:
                out["sandbox"] = p.sandbox
        case GatePlan() | Note():
            out.update(clip(p.text))
        case SessionStart() | SessionResume():
            version = "" if p.recipe is None else f"window-v{p.recipe.version}"
            out["text"] = f"model {p.model}, recipe {version}" + confinement(p)
        case Bookkeeping():  # one sentence, then what it carries
            out["sentence"] = in_words(e)
            carried = p.text if isinstance(p, ResultFold) else p.result if isinstance(p, CtxClose) else None
            out.update(clip(carried) if carried is not None else {"text": None})
            if isinstance(p, ResultFold):
                out["target"] = p.target
        case Observed() | None:
            # an imported session's, or a damaged payload: its fields
            out["text"] = ", ".join(f"{k}: {_s(v)[:80]}" for k, v in data.items())
        case _:
            assert_never(p)
    return out


def confinement(p: SessionStart | SessionResume) -> str:
    """``, sandbox workspace-write (no network), approval ask`` as a session event recorded them."""
    if p.sandbox is None:
        return ""
    net = "" if p.network is None else " (network on)" if p.network else " (no network)"
    return f", sandbox {p.sandbox}{net}" + ("" if p.approval is None else f", approval {p.approval}")


def request_json(r: Request) -> dict[str, Any]:
    """A rebuilt request as the window view shows it: texts clipped, blocks counted only."""
    messages: list[dict[str, Any]] = []
    for m in r.messages:
        if isinstance(m, UserMessage):
            texts = [p.text for p in m.parts if isinstance(p, TextPart)]
            images = sum(1 for p in m.parts if isinstance(p, ImagePart))
            messages.append({"role": "user", "images": images, **clip("\n".join(texts))})
        elif isinstance(m, AssistantMessage):
            messages.append({"role": "assistant", **_said(m)})
        elif isinstance(m, ToolMessage):
            messages.append({"role": "tool", "name": m.name, "error": m.error, **clip(m.text)})
    return {
        "system": clip(r.system),
        "tools": [t.name for t in r.tools],
        "max_output": r.max_output,
        "messages": messages,
    }
