"""Checking a tool call's JSON arguments against the tool's schema, with one clear message."""

from __future__ import annotations

import json
from typing import Any

from nodwyn.errors import ToolError
from nodwyn.values.request import ToolSpec

_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "boolean": bool,
    "array": list,
    "object": dict,
    "number": (int, float),
}


def parse_arguments(spec: ToolSpec, raw: str) -> dict[str, Any]:
    name = spec.name
    try:
        value = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise ToolError(
            f"{name}: arguments are not valid JSON ({exc.msg} at char {exc.pos}); send an object like "
            f"{_example(spec)}"
        ) from None
    if not isinstance(value, dict):
        raise ToolError(f"{name}: arguments must be a JSON object like {_example(spec)}")
    props: dict[str, Any] = spec.parameters.get("properties", {})
    for req in spec.parameters.get("required", []):
        if req not in value:
            raise ToolError(f"{name}: missing required argument {req!r}; expected {_example(spec)}")
    for key, val in value.items():
        if key not in props:
            raise ToolError(
                f"{name}: unknown argument {key!r}; it takes {', '.join(sorted(props)) or 'none'}"
            )
        want = props[key].get("type")
        typ = _TYPES.get(want) if isinstance(want, str) else None
        if typ is None:
            continue
        ok = isinstance(val, typ) and not (want in ("integer", "number") and isinstance(val, bool))
        if not ok:
            article = "an" if want[0] in "aeiou" else "a"
            raise ToolError(f"{name}: argument {key!r} must be {article} {want}, got {json.dumps(val)[:60]}")
        if want == "array" and "items" in props[key]:
            item_type = _TYPES.get(props[key]["items"].get("type", ""))
            if item_type is not None and not all(isinstance(v, item_type) for v in val):
                raise ToolError(f"{name}: argument {key!r} must be a list of {props[key]['items']['type']}s")
    return value


def _example(spec: ToolSpec) -> str:
    props: dict[str, Any] = spec.parameters.get("properties", {})
    req = spec.parameters.get("required", list(props))
    return "{" + ", ".join(f'"{k}": <{props[k].get("type", "value")}>' for k in req if k in props) + "}"
