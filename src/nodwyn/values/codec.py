"""JSON shapes of the values: what goes into the log and into the canonical request.

``*_to_json`` returns plain dicts/lists (the canonical form hashes ``request_to_json``);
``*_from_json`` validates and rebuilds, raising ``CorruptLogError`` naming the bad field.
Round trips are the identity (tested with hypothesis).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar, cast

from nodwyn.errors import CorruptLogError
from nodwyn.values.content import (
    AssistantMessage,
    BlockType,
    ImagePart,
    Message,
    Origin,
    TextPart,
    ThinkingBlock,
    ToolCall,
    ToolMessage,
    UserMessage,
    UserPart,
)
from nodwyn.values.fields import field
from nodwyn.values.model import Prices
from nodwyn.values.recipe import Flag, Recipe, WindowLimits, extra_flag, rules_for
from nodwyn.values.request import CacheReport, Request, Response, Timings, ToolSpec, Usage

Json = dict[str, Any]
_T = TypeVar("_T")

_BLOCK_TYPES = ("thinking", "redacted_thinking", "reasoning", "reasoning_details")


def _each(d: Any, key: str, read: Callable[[Any, str], _T], where: str, default: Any = ...) -> tuple[_T, ...]:
    """The array field ``key`` of ``d``, each item read by ``read`` as ``where.key[i]``."""
    return tuple(read(v, f"{where}.{key}[{i}]") for i, v in enumerate(field(d, key, list, where, default)))


# -- parts -------------------------------------------------------------------------------------


def origin_to_json(o: Origin) -> Json:
    return {"model": o.model, "server": o.server, "url": o.url, "credential": o.credential}


def origin_from_json(d: Any, where: str = "origin") -> Origin:
    return Origin(
        model=field(d, "model", str, where),
        server=field(d, "server", (str, type(None)), where, None),
        url=field(d, "url", (str, type(None)), where, None),
        credential=field(d, "credential", (str, type(None)), where, None),
    )


def block_to_json(b: ThinkingBlock) -> Json:
    return {
        "type": b.type,
        "origin": origin_to_json(b.origin),
        "data": b.data,
        "text": b.text,
        "position": b.position,
    }


def block_from_json(d: Any, where: str = "block") -> ThinkingBlock:
    typ = field(d, "type", str, where)
    if typ not in _BLOCK_TYPES:
        raise CorruptLogError(f"{where}.type: unknown block type {typ!r}")
    return ThinkingBlock(
        type=cast(BlockType, typ),
        origin=origin_from_json(field(d, "origin", dict, where), f"{where}.origin"),
        data=field(d, "data", str, where),
        text=field(d, "text", str, where, ""),
        position=field(d, "position", int, where, 0),
    )


def call_to_json(c: ToolCall) -> Json:
    return {"id": c.id, "name": c.name, "arguments": c.arguments}


def call_from_json(d: Any, where: str = "call") -> ToolCall:
    return ToolCall(
        id=field(d, "id", str, where),
        name=field(d, "name", str, where),
        arguments=field(d, "arguments", str, where),
    )


def part_to_json(p: UserPart) -> Json:
    if isinstance(p, TextPart):
        return {"type": "text", "text": p.text}
    return {
        "type": "image",
        "digest": p.digest,
        "media_type": p.media_type,
        "width": p.width,
        "height": p.height,
    }


def part_from_json(d: Any, where: str = "part") -> UserPart:
    typ = field(d, "type", str, where)
    if typ == "text":
        return TextPart(text=field(d, "text", str, where))
    if typ == "image":
        return ImagePart(
            digest=field(d, "digest", str, where),
            media_type=field(d, "media_type", str, where),
            width=field(d, "width", int, where),
            height=field(d, "height", int, where),
        )
    raise CorruptLogError(f"{where}.type: unknown part type {typ!r}")


def _image_part(d: Any, where: str) -> ImagePart:
    part = part_from_json(d, where)
    if not isinstance(part, ImagePart):
        raise CorruptLogError(f"{where}.type: a tool message's images are image parts")
    return part


# -- messages ----------------------------------------------------------------------------------


def message_to_json(m: Message) -> Json:
    if isinstance(m, UserMessage):
        return {"role": "user", "content": [part_to_json(p) for p in m.parts]}
    if isinstance(m, AssistantMessage):
        out: Json = {
            "role": "assistant",
            "text": m.text,
            "thinking": m.thinking,
            "calls": [call_to_json(c) for c in m.calls],
            "blocks": [block_to_json(b) for b in m.blocks],
        }
        if m.phase is not None:  # only when present: a request without one hashes as before
            out["phase"] = m.phase
        if m.raw is not None:  # only when present: digests of requests without it are unchanged
            out["raw"] = m.raw
        return out
    out = {"role": "tool", "call_id": m.call_id, "name": m.name, "text": m.text, "error": m.error}
    if m.images:  # only when present: digests of requests without images are unchanged
        out["images"] = [part_to_json(p) for p in m.images]
    return out


def message_from_json(d: Any, where: str = "message") -> Message:
    role = field(d, "role", str, where)
    if role == "user":
        return UserMessage(parts=_each(d, "content", part_from_json, where))
    if role == "assistant":
        return AssistantMessage(
            text=field(d, "text", str, where, ""),
            thinking=field(d, "thinking", str, where, ""),
            calls=_each(d, "calls", call_from_json, where, []),
            blocks=_each(d, "blocks", block_from_json, where, []),
            phase=field(d, "phase", str, where, None),
            raw=field(d, "raw", (str, type(None)), where, None),
        )
    if role == "tool":
        return ToolMessage(
            call_id=field(d, "call_id", str, where),
            name=field(d, "name", str, where),
            text=field(d, "text", str, where),
            error=field(d, "error", bool, where, False),
            images=_each(d, "images", _image_part, where, []),
        )
    raise CorruptLogError(f"{where}.role: unknown role {role!r}")


# -- tools, request, response --------------------------------------------------------------------


def tool_to_json(t: ToolSpec) -> Json:
    return {"name": t.name, "description": t.description, "parameters": t.parameters}


def tool_from_json(d: Any, where: str = "tool") -> ToolSpec:
    return ToolSpec(
        name=field(d, "name", str, where),
        description=field(d, "description", str, where),
        parameters=field(d, "parameters", dict, where),
    )


def request_to_json(r: Request) -> Json:
    """The provider-neutral request as JSON: what its digest covers."""
    return {
        "system": r.system,
        "tools": [tool_to_json(t) for t in r.tools],
        "messages": [message_to_json(m) for m in r.messages],
        "max_output": r.max_output,
    }


def request_from_json(d: Any, where: str = "request") -> Request:
    return Request(
        system=field(d, "system", str, where),
        tools=_each(d, "tools", tool_from_json, where),
        messages=_each(d, "messages", message_from_json, where),
        max_output=field(d, "max_output", (int, type(None)), where, None),
    )


_USAGE_FIELDS = (
    "prompt_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
)


def usage_to_json(u: Usage) -> Json:
    return {f: getattr(u, f) for f in _USAGE_FIELDS}


def usage_from_json(d: Any, where: str = "usage") -> Usage:
    return Usage(**{f: field(d, f, (int, type(None)), where, None) for f in _USAGE_FIELDS})


def response_to_json(r: Response) -> Json:
    out: Json = {
        "text": r.text,
        "thinking": r.thinking,
        "calls": [call_to_json(c) for c in r.calls],
        "blocks": [block_to_json(b) for b in r.blocks],
        "usage": usage_to_json(r.usage),
        "finish": r.finish,
        "model": r.model,
        "timings": {"prefill_ms": r.timings.prefill_ms, "total_ms": r.timings.total_ms},
        "notes": list(r.notes),
    }
    for key in ("phase", "raw", "id"):  # only when present: older replies read and hash as before
        if getattr(r, key) is not None:
            out[key] = getattr(r, key)
    if r.cache_report is not None:
        c = r.cache_report
        out["cache_report"] = {"against": c.against, "reason": c.reason, "missed_tokens": c.missed_tokens}
    return out


def cache_report_from_json(d: Any, where: str) -> CacheReport | None:
    if d is None:
        return None
    opt_s, opt_i = (str, type(None)), (int, type(None))
    return CacheReport(
        against=field(d, "against", opt_s, where, None),
        reason=field(d, "reason", opt_s, where, None),
        missed_tokens=field(d, "missed_tokens", opt_i, where, None),
    )


def response_from_json(d: Any, where: str = "response") -> Response:
    timings = field(d, "timings", dict, where, {})
    num = (int, float, type(None))
    return Response(
        text=field(d, "text", str, where, ""),
        thinking=field(d, "thinking", str, where, ""),
        calls=_each(d, "calls", call_from_json, where, []),
        blocks=_each(d, "blocks", block_from_json, where, []),
        usage=usage_from_json(field(d, "usage", dict, where, {}), f"{where}.usage"),
        finish=field(d, "finish", (str, type(None)), where, None),
        model=field(d, "model", (str, type(None)), where, None),
        timings=Timings(
            prefill_ms=field(timings, "prefill_ms", num, f"{where}.timings", None),
            total_ms=field(timings, "total_ms", num, f"{where}.timings", None),
        ),
        notes=tuple(field(d, "notes", list, where, [])),
        phase=field(d, "phase", str, where, None),
        raw=field(d, "raw", (str, type(None)), where, None),
        id=field(d, "id", (str, type(None)), where, None),
        cache_report=cache_report_from_json(
            field(d, "cache_report", (dict, type(None)), where, None), f"{where}.cache_report"
        ),
    )


# -- recipe ------------------------------------------------------------------------------------


def prices_to_json(p: Prices) -> Json:
    out: dict[str, float] = {"input": p.input, "output": p.output}
    for key in ("cached_input", "cache_write"):
        if getattr(p, key) is not None:
            out[key] = getattr(p, key)
    return out


def prices_from_json(d: Any, where: str) -> Prices:
    num = (int, float)
    opt = (int, float, type(None))
    for key in d if isinstance(d, dict) else ():
        if key not in ("input", "output", "cached_input", "cache_write"):
            raise CorruptLogError(f"{where}: unknown price {key!r}")
    return Prices(
        input=float(field(d, "input", num, where)),
        output=float(field(d, "output", num, where)),
        cached_input=_float_or_none(field(d, "cached_input", opt, where, None)),
        cache_write=_float_or_none(field(d, "cache_write", opt, where, None)),
    )


def _float_or_none(value: float | None) -> float | None:
    return None if value is None else float(value)


_LIMIT_KEYS = tuple(f.name for f in dataclasses.fields(WindowLimits))  # high_water, low_water, ...


def recipe_to_json(r: Recipe) -> Json:
    out: dict[str, Any] = {
        "version": f"window-v{r.version}",
        "system": r.system,
        "tools": [tool_to_json(t) for t in r.tools],
        "limits": {k: getattr(r.limits, k) for k in _LIMIT_KEYS},
        "context_size": r.context_size,
        "keep_alive": r.keep_alive,
        "task_header": r.task_header,
        "plan_header": r.plan_header,
        **({"flags": [f.value for f in r.extra_flags]} if r.extra_flags else {}),
    }
    if r.prices is not None:  # written only when recorded, so older recipes encode as they did
        out["prices"] = {name: prices_to_json(p) for name, p in r.prices}
    if r.weights is not None:  # only when present: recipes recorded without it read the same
        out["weights"] = r.weights
    if r.trim_depth is not None:  # v21's dial, only when set: older recipes encode as they did
        out["trim_depth"] = r.trim_depth
    return out


def recipe_from_json(d: Any, where: str = "recipe") -> Recipe:
    from nodwyn.values.recipe import parse_version, policy_for

    version = parse_version(field(d, "version", str, where))
    policy_for(version)  # refuses unknown versions
    lim = field(d, "limits", dict, where)
    lw = f"{where}.limits"
    opt = (str, type(None))
    return Recipe(
        version=version,
        system=field(d, "system", str, where),
        tools=_each(d, "tools", tool_from_json, where),
        limits=WindowLimits(**{k: field(lim, k, int, lw) for k in _LIMIT_KEYS}),
        context_size=field(d, "context_size", int, where),
        keep_alive=field(d, "keep_alive", opt, where, None),
        task_header=field(d, "task_header", opt, where, None),
        plan_header=field(d, "plan_header", opt, where, None),
        extra_flags=_flags(field(d, "flags", list, where, []), f"{where}.flags"),
        prices=recipe_prices(field(d, "prices", (dict, type(None)), where, None), f"{where}.prices"),
        weights=field(d, "weights", opt, where, None),
        trim_depth=_trim_depth(version, field(d, "trim_depth", opt, where, None)),
    )


def _trim_depth(version: int, name: str | None) -> str | None:
    """A recipe's dial position, refused (as an unknown version is) where its version has no dial
    or does not know it."""
    if name is not None:
        rules_for(version, (), name)
    return name


def _flags(raw: list[Any], where: str) -> tuple[Flag, ...]:
    out = []
    for i, name in enumerate(raw):
        if not isinstance(name, str):
            raise CorruptLogError(f"{where}[{i}]: expected a flag name, got {type(name).__name__}")
        out.append(extra_flag(name))
    if len(set(out)) != len(out):
        raise CorruptLogError(f"{where}: a flag is named twice")
    return tuple(out)


def recipe_prices(d: Any, where: str) -> tuple[tuple[str, Prices], ...] | None:
    if d is None:
        return None
    if not isinstance(d, dict):
        raise CorruptLogError(f"{where}: expected an object of prices by model entry")
    return tuple((name, prices_from_json(p, f"{where}.{name}")) for name, p in sorted(d.items()))
