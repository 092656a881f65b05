"""A server's ``inputSchema`` as the model sees it: checked to be JSON Schema, and canonical.

The same server version must give the same bytes in every session, so the schema carries no value
canonical JSON has no form for: a float that is an integer (``1.0``) is written as one, and a
keyword whose value holds any other float (``"minimum": 0.5``) is left out of what the model sees
and named in a note (ADR 0362). Calls are still checked against the server's whole schema.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import jsonschema.exceptions

from nodwyn.errors import ToolError


def check_schema(schema: object, where: str) -> dict[str, Any]:
    """``schema`` if it is a JSON Schema for an object of arguments; else one line naming it."""
    if not isinstance(schema, dict):
        raise ToolError(f"{where}: inputSchema is not a JSON object; the server must send a JSON Schema")
    if schema.get("type") != "object":
        raise ToolError(f'{where}: inputSchema must have "type": "object" (it has {schema.get("type")!r})')
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        at = "/".join(str(p) for p in exc.path) or "the top"
        raise ToolError(
            f"{where}: inputSchema is not valid JSON Schema at {at}: {exc.message[:200]}"
        ) from None
    except (jsonschema.exceptions.UnknownType, TypeError, ValueError, RecursionError) as exc:
        raise ToolError(f"{where}: inputSchema cannot be read as JSON Schema: {exc}"[:300]) from None
    return schema


def canonical_schema(schema: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The schema the model sees, and the paths of the keywords left out (floats)."""
    dropped: list[str] = []

    def clean(value: Any, path: str) -> Any:
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if _has_fraction(v):
                    dropped.append(f"{path}/{k}")
                    continue
                out[k] = clean(v, f"{path}/{k}")
            return out
        if isinstance(value, list):
            return [clean(v, f"{path}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, float):
            return int(value)
        return value

    return clean(schema, ""), dropped


def _has_fraction(value: Any) -> bool:
    if isinstance(value, float):
        return not value.is_integer() or abs(value) > 2**53
    if isinstance(value, list):
        return any(_has_fraction(v) for v in value)
    return False


def check_arguments(schema: dict[str, Any], args: dict[str, Any], tool: str) -> None:
    """Refuse, before anything is sent to the server, arguments its schema refuses."""
    try:
        jsonschema.validators.validator_for(schema)(schema).validate(args)
    except jsonschema.exceptions.ValidationError as exc:
        at = "/".join(str(p) for p in exc.absolute_path)
        where = f" at {at}" if at else ""
        raise ToolError(
            f"{tool}: arguments do not match the tool's schema{where}: {exc.message[:200]}"
        ) from None
