"""Checking a tool call's JSON arguments against the tool's schema, with one clear message."""

from __future__ import annotations

import json
from typing import Any

from nodwyn.agent.tools.base import SURROGATE
from nodwyn.errors import ToolError
from nodwyn.values.arguments import ArgumentsError, load_arguments
from nodwyn.values.request import BLOCK_KEY, ToolSpec

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
        value = load_arguments(raw)
    except ArgumentsError as exc:
        raise ToolError(f"{name}: {exc}; send an object like {_example(spec)}") from None
    if not isinstance(value, dict):
        raise ToolError(f"{name}: arguments must be a JSON object like {_example(spec)}")
    for key, val in value.items():
        bad = _surrogate(key) or _surrogate(val)
        if bad is not None:
            raise ToolError(
                f"{name}: argument {_escaped(key)!r} holds a lone surrogate (\\u{ord(bad):04x}), which is "
                "not text; write the characters themselves, not a \\u escape of half of one"
            )
    props: dict[str, Any] = spec.parameters.get("properties", {})
    for req in spec.parameters.get("required", []):
        if req not in value:
            raise ToolError(f"{name}: {_missing(spec, req, value)}")
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


def _surrogate(value: object) -> str | None:
    """The first lone surrogate in a string of ``value`` (nested at most MAX_DEPTH deep), if any."""
    if isinstance(value, str):
        m = SURROGATE.search(value)
        return None if m is None else m.group()
    if isinstance(value, dict):
        value = [*value.keys(), *value.values()]
    if isinstance(value, list):
        for item in value:
            found = _surrogate(item)
            if found is not None:
                return found
    return None


def _escaped(text: str) -> str:
    return SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _missing(spec: ToolSpec, key: str, given: dict[str, Any]) -> str:
    """What a call without ``key`` lacks, and the shape expected: an edit block's text (ADR 0440)
    is missing when no block followed the call; the call to write again is shown with the
    arguments it was given (its own path, ADR 0445)."""
    props: dict[str, Any] = spec.parameters.get("properties", {})
    mark = props.get(key, {}).get(BLOCK_KEY) if isinstance(props.get(key), dict) else None
    if mark is None:
        return f"missing required argument {key!r}; expected {_example(spec)}"
    bare = {k: v for k, v in props.items() if not (isinstance(v, dict) and BLOCK_KEY in v)}
    call = "{" + ", ".join(f'"{k}": {_given(given, k, bare[k])}' for k in bare) + "}"
    if mark == "fence":
        block = "the whole new file in a fenced code block:\n```\nthe file's lines\n```"
    else:
        block = (
            "a line <<<<<<< SEARCH, the lines to change copied exactly from the file, a line "
            "=======, the lines to put instead, and a line >>>>>>> REPLACE"
        )
    return (
        f"no {key!r} block followed the call, so nothing was done; call it with {call}, "
        f"then right after the call write {block}"
    )


def _given(given: dict[str, Any], key: str, schema: dict[str, Any]) -> str:
    """The value a call gave ``key`` as JSON (a short string or number), else its type's placeholder."""
    value = given.get(key)
    if isinstance(value, (str, int, float)) and not isinstance(value, bool) and len(str(value)) <= 200:
        return json.dumps(value, ensure_ascii=False)
    return f"<{schema.get('type', 'value')}>"


def _example(spec: ToolSpec) -> str:
    props: dict[str, Any] = spec.parameters.get("properties", {})
    req = spec.parameters.get("required", list(props))
    return "{" + ", ".join(f'"{k}": <{props[k].get("type", "value")}>' for k in req if k in props) + "}"
