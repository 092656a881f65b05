"""JSON shapes the console's pages read. Reasoning blocks never leave the server: a reply's
``blocks`` (signed thinking, encrypted reasoning, reasoning_details) are counted, not shown."""

from __future__ import annotations

from typing import Any

from nodwyn.replay.transcript import in_words, label
from nodwyn.values.content import AssistantMessage, ImagePart, TextPart, ToolMessage, UserMessage
from nodwyn.values.events import Event
from nodwyn.values.request import Request

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


def event_json(e: Event) -> dict[str, Any]:
    """One transcript entry: what a person reads of the event, clipped, never reasoning blocks."""
    data = _d(e.data)
    out: dict[str, Any] = {"seq": e.seq, "t": e.t, "kind": e.kind, "label": label(e.kind), "ctx": e.ctx}
    sentence = in_words(e)
    if e.kind == "user.msg":
        out.update(clip(_s(data.get("text"))))
        images = data.get("images")
        out["images"] = len(images) if isinstance(images, list) else 0
    elif e.kind == "llm.resp":
        resp = _d(data.get("response"))
        out["req"] = data.get("req")
        out.update(clip(_s(resp.get("text"))))
        out["thinking"] = clip(_s(resp.get("thinking")))
        calls = resp.get("calls")
        out["calls"] = [
            {"name": _s(_d(c).get("name")), **clip(_s(_d(c).get("arguments")), 600)}
            for c in (calls if isinstance(calls, list) else [])
        ]
        blocks = resp.get("blocks")
        out["blocks"] = len(blocks) if isinstance(blocks, list) else 0
        out["usage"] = resp.get("usage") if isinstance(resp.get("usage"), dict) else None
    elif e.kind == "llm.req":
        elided = data.get("elided")
        out.update(
            model=_s(data.get("model")),
            trim=data.get("trim") is True,
            estimate=data.get("estimate"),
            elided=len(elided) if isinstance(elided, list) else 0,
        )
    elif e.kind == "tool.result":
        out.update(name=_s(data.get("name")), error=data.get("error") is True, **clip(_s(data.get("text"))))
    elif e.kind in ("gate.plan", "note"):
        out.update(clip(_s(data.get("text"))))
    elif e.kind in ("session.start", "session.resume"):
        recipe = _d(data.get("recipe"))
        out["text"] = f"model {_s(data.get('model'))}, recipe {_s(recipe.get('version'))}"
    elif sentence is not None:  # bookkeeping: one sentence, then what it carries (a fold's note)
        out["sentence"] = sentence
        carried = data.get("text", data.get("result"))
        out.update(clip(_s(carried)) if isinstance(carried, str) else {"text": None})
        if "target" in data:
            out["target"] = data.get("target")
    else:  # a kind this console does not know: its fields, as they are
        out["text"] = ", ".join(f"{k}: {_s(v)[:80]}" for k, v in data.items())
    return out


def request_json(r: Request) -> dict[str, Any]:
    """A rebuilt request as the window view shows it: texts clipped, blocks counted only."""
    messages: list[dict[str, Any]] = []
    for m in r.messages:
        if isinstance(m, UserMessage):
            texts = [p.text for p in m.parts if isinstance(p, TextPart)]
            images = sum(1 for p in m.parts if isinstance(p, ImagePart))
            messages.append({"role": "user", "images": images, **clip("\n".join(texts))})
        elif isinstance(m, AssistantMessage):
            messages.append(
                {
                    "role": "assistant",
                    **clip(m.text),
                    "thinking": clip(m.thinking),
                    "calls": [{"name": c.name, **clip(c.arguments, 600)} for c in m.calls],
                    "blocks": len(m.blocks),
                }
            )
        elif isinstance(m, ToolMessage):
            messages.append({"role": "tool", "name": m.name, "error": m.error, **clip(m.text)})
    return {
        "system": clip(r.system),
        "tools": [t.name for t in r.tools],
        "max_output": r.max_output,
        "messages": messages,
    }
