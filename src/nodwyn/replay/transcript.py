"""Transcript replay: the conversation of any log as a person reads it.

Unlike exact replay this never refuses a log: a legacy request, an unknown recipe version or a
payload of the wrong shape is shown as it is, with a ``?`` note, so old and damaged logs stay
readable. It renders only what the log holds; it builds no request and verifies nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from nodwyn.log.jsonl import CTX_ID
from nodwyn.values.events import Event

_INDENT = "    "


@dataclass(frozen=True, slots=True, kw_only=True)
class Damaged:
    """A line of the log that is not a whole event, found by a tolerant reading (``tolerant.py``)."""

    offset: int  # byte offset of the line in log.jsonl
    size: int
    reason: str
    torn: bool = False  # bytes after the last newline: a torn write, or one in progress


def render_damage(d: Damaged) -> list[str]:
    what = "torn tail" if d.torn else "damaged line"
    return [f"!! {what} at byte {d.offset} ({d.size} bytes): {d.reason}"]


def _s(value: Any) -> str:
    """A payload field as text, whatever its type (damaged logs hold anything)."""
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


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _recipe_line(recipe: dict[str, Any]) -> str:
    limits = _dict(recipe.get("limits"))
    tools = [_s(_dict(t).get("name")) for t in _list(recipe.get("tools"))]
    parts = [
        _s(recipe.get("version")) or "no recipe version",
        f"context {_s(recipe.get('context_size'))}",
        f"high water {_s(limits.get('high_water'))}",
        f"low water {_s(limits.get('low_water'))}",
        f"result cap {_s(limits.get('max_result_tokens'))}",
        f"output reserve {_s(limits.get('output_reserve'))}",
    ]
    if recipe.get("keep_alive") is not None:
        parts.append(f"keep-alive {_s(recipe.get('keep_alive'))}")
    head = ", ".join(parts)
    return f"{head}; tools: {', '.join(tools) if tools else '(none)'}"


def _session(ev: Event, verb: str) -> list[str]:
    recipe = ev.data.get("recipe")
    lines = [f"{verb} with model {_s(ev.data.get('model'))}"]
    if isinstance(recipe, dict):
        lines.append(f"{_INDENT}recipe {_recipe_line(recipe)}")
        if isinstance(recipe.get("system"), str):
            lines.extend(_block("system", recipe["system"]))
    else:
        lines.append(f"{_INDENT}? no recipe recorded (a legacy session: exact replay refuses it)")
    if isinstance(ev.data.get("workspace"), str):
        lines.append(f"{_INDENT}workspace {ev.data['workspace']}")
    return lines


def _user(ev: Event) -> list[str]:
    lines = ["person:"]
    lines.extend(_block("", _s(ev.data.get("text"))))
    for img in _list(ev.data.get("images")):
        d = _dict(img)
        name = _s(d.get("name")) or _s(d.get("digest"))
        size = f"{_s(d.get('width'))}x{_s(d.get('height'))}"
        lines.append(f"{_INDENT}[image {name} {_s(d.get('media_type'))} {size}]")
    return lines


def _request(ev: Event) -> list[str]:
    d = ev.data
    facts = [f"to {_s(d.get('model'))}", f"estimate {_s(d.get('estimate'))} tokens"]
    if d.get("trim"):
        facts.append(
            f"trim point (high water {_s(d.get('high_water'))})" if "high_water" in d else "trim point"
        )
    elif "high_water" in d:
        facts.append(f"high water {_s(d.get('high_water'))}")
    if d.get("headroom"):
        facts.append("headroom")
    if d.get("no_tools"):
        facts.append("no tools")
    if "offered_tools" in d:
        facts.append("tools " + ", ".join(_s(t) for t in _list(d.get("offered_tools"))))
    if "max_output" in d:
        facts.append(f"max output {_s(d.get('max_output'))}")
    lines = ["request " + ", ".join(facts)]
    moved = [_s(m) for m in _list(d.get("moved")) if m != "first"]
    if moved:
        lines.append(f"{_INDENT}prefix moved: " + ", ".join(moved))
    elided = _list(d.get("elided"))
    if elided:
        lines.append(f"{_INDENT}elided " + ", ".join(f"#{_s(s)}" for s in elided))
    for w in _list(d.get("withheld_images")):
        wd = _dict(w)
        lines.append(f"{_INDENT}withheld image {_s(wd.get('digest'))}: {_s(wd.get('reason'))}")
    if "digest" not in d:
        lines.append(f"{_INDENT}? no digest recorded (legacy request: exact replay refuses it)")
    else:
        lines.append(f"{_INDENT}digest {_s(d.get('digest'))}")
    return lines


def _reply(ev: Event) -> list[str]:
    resp = _dict(ev.data.get("response"))
    lines = [
        f"reply to #{_s(ev.data.get('req'))}" + (f" ({_s(resp['finish'])})" if resp.get("finish") else "")
    ]
    if resp.get("thinking"):
        lines.extend(_block("thinking", _s(resp.get("thinking"))))
    blocks = _list(resp.get("blocks"))
    if blocks:
        kinds = ", ".join(_s(_dict(b).get("type")) for b in blocks)
        lines.append(f"{_INDENT}reasoning blocks: {kinds}")
    if resp.get("text"):
        lines.extend(_block("text", _s(resp.get("text"))))
    for call in _list(resp.get("calls")):
        c = _dict(call)
        lines.extend(_block(f"call {_s(c.get('name'))} [{_s(c.get('id'))}]", _s(c.get("arguments"))))
    usage = _dict(resp.get("usage"))
    if usage:
        shown = [
            f"{k.removesuffix('_tokens')} {usage[k]}"
            for k in (
                "prompt_tokens",
                "cached_tokens",
                "cache_write_tokens",
                "output_tokens",
                "reasoning_tokens",
            )
            if usage.get(k) is not None
        ]
        if shown:
            lines.append(f"{_INDENT}usage: " + ", ".join(shown))
    return lines


def _result(ev: Event) -> list[str]:
    d = ev.data
    head = f"result of {_s(d.get('name'))} [{_s(d.get('call_id'))}]"
    if d.get("error"):
        head += " (error)"
    rng = _dict(d.get("range"))
    if rng:
        head += f" lines {_s(rng.get('start'))}-{_s(rng.get('end'))} of {_s(rng.get('total'))}"
    return [head, *_block("", _s(d.get("text")))]


def _other(ev: Event) -> list[str]:
    d = ev.data
    k = ev.kind
    if k == "gate.plan":
        return ["plan:", *_block("", _s(d.get("text")))]
    if k == "result.fold":
        return [f"fold of result #{_s(d.get('target'))}:", *_block("", _s(d.get("text")))]
    if k == "summary.add":
        head = (
            f"summary of #{_s(d.get('first'))}..#{_s(d.get('last'))} (source {_s(d.get('source_digest'))}):"
        )
        return [head, *_block("", _s(d.get("text")))]
    if k == "summary.revoke":
        return [f"summary #{_s(d.get('summary'))} revoked"]
    if k == "ctx.open":
        line = f"context {_s(d.get('id'))} opened ({_s(d.get('kind'))})"
        extra = _block("system", _s(d["system"])) if isinstance(d.get("system"), str) else []
        return [line, *extra]
    if k == "ctx.close":
        extra = _block("result", _s(d["result"])) if isinstance(d.get("result"), str) else []
        return [f"context {_s(d.get('id'))} closed", *extra]
    if k == "ctx.widen":
        return [f"context widened: {_s(d)}"]
    if k == "model.switch":
        return [f"model switched to {_s(d.get('model'))}"]
    if k == "log.repaired":
        return [
            f"log repaired: {_s(d.get('truncated_bytes'))} torn bytes cut at offset {_s(d.get('offset'))}"
        ]
    if k == "note":
        return ["note:", *_block("", _s(d.get("text")))]
    return [f"? unknown event kind {k!r}: {_s(d)}"]


# What a person calls each kind of event (the console's transcript and the Markdown export).
LABELS = {
    "session.start": "session started",
    "session.resume": "session resumed",
    "user.msg": "person",
    "llm.req": "request",
    "llm.resp": "reply",
    "tool.result": "tool result",
    "gate.plan": "plan",
    "result.fold": "tool result folded",
    "summary.add": "summary",
    "summary.revoke": "summary withdrawn",
    "ctx.open": "context opened",
    "ctx.close": "context closed",
    "ctx.widen": "context widened",
    "model.switch": "model switched",
    "note": "note",
    "log.repaired": "log repaired",
}


def label(kind: str) -> str:
    return LABELS.get(kind, kind)


def in_words(ev: Event) -> str | None:
    """A sentence for the bookkeeping events (contexts, folds, summaries, switches, repairs) as a
    person would say it, instead of their fields; None for the kinds shown by their own text."""
    d = _dict(ev.data)
    k = ev.kind
    cid = _s(d.get("id"))
    if k == "ctx.open" and d.get("kind") == "sub":
        tools = [_s(t) for t in _list(d.get("offered_tools"))]
        return f"A sub-agent started ({cid})" + (f" with the tools {', '.join(tools)}" if tools else "") + "."
    if k == "ctx.open" and d.get("lasting") is True:
        return (
            "The conversation was compacted: later requests start from the note the model wrote; "
            "the earlier conversation stays in the log."
        )
    if k == "ctx.open":
        return f"The conversation narrowed to a side task ({cid}); what came before is hidden until it ends."
    if k == "ctx.close":
        return f"The side conversation {cid} ended" + (": its answer follows." if "result" in d else ".")
    if k == "ctx.widen":
        return f"The side conversation {cid} ended and joined the conversation it came from."
    if k == "result.fold":
        return f"The tool result at #{_s(d.get('target'))} was replaced by a short note to save room."
    if k == "summary.add":
        return f"Events #{_s(d.get('first'))} to #{_s(d.get('last'))} are shown to the model as a summary."
    if k == "summary.revoke":
        return (
            f"The summary at #{_s(d.get('summary'))} was withdrawn; the events it stood for are shown again."
        )
    if k == "model.switch":
        return f"Switched to the model {_s(d.get('model'))}."
    if k == "log.repaired":
        return (
            f"A torn last line ({_s(d.get('truncated_bytes'))} bytes, from a run that stopped mid-write) "
            "was cut when the session was opened again."
        )
    return None


_RENDER = {
    "user.msg": _user,
    "llm.req": _request,
    "llm.resp": _reply,
    "tool.result": _result,
}


def render_event(ev: Event) -> list[str]:
    """The lines of one event: ``#SEQ [ctx] first line`` then indented detail."""
    if ev.kind == "session.start":
        body = _session(ev, "session started")
    elif ev.kind == "session.resume":
        body = _session(ev, "session resumed")
    else:
        body = _RENDER.get(ev.kind, _other)(ev)
    ctx = ev.ctx if isinstance(ev.ctx, str) and CTX_ID.fullmatch(ev.ctx) else repr(ev.ctx)
    where = "" if ctx == "main" else f" [{ctx}]"
    return [f"#{ev.seq}{where} {body[0]}", *body[1:]]


def transcript(events: Iterable[Event | Damaged]) -> Iterator[str]:
    """Every event's lines, with a blank line before each person's message; damage noted in place."""
    first = True
    for ev in events:
        if isinstance(ev, Damaged):
            yield from render_damage(ev)
            continue
        if ev.kind == "user.msg" and not first:
            yield ""
        first = False
        yield from render_event(ev)


def transcript_json(ev: Event) -> dict[str, Any]:
    """One event as a JSON transcript entry: the envelope plus its rendered text."""
    return {"seq": ev.seq, "t": ev.t, "kind": ev.kind, "ctx": ev.ctx, "text": "\n".join(render_event(ev))}
