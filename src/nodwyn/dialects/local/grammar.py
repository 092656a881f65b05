"""The grammar a local model's tool call is decoded under (pure): llama.cpp's GBNF, built from the
offered tools' JSON schemas, for the text that follows the call's opening tag.

Once the model has written ``<tool_call>`` the backend samples the rest of the call under this
grammar (lazily, as llama.cpp's server does with its tool-call grammars: prose is never
constrained). What it allows is ``{"name": TOOL, "arguments": ARGS}`` for one offered TOOL, ARGS
an object holding the tool's required properties (in the order ``required`` names them, as the
prompt lists them) and any of its other properties after them, each value of its schema's type;
then the closing tag. Strings are JSON strings: a newline or a quote inside one must be escaped,
so the call a model completes always parses. A part of a schema this does not model (``anyOf``, a
``$ref``) takes any JSON value there, and the tool runner checks it, as it checks every call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from nodwyn.dialects.local.blocks import Block, block_grammar, shown
from nodwyn.values.request import ToolSpec

_WS = "ws ::= [ \\t\\n]{0,3}"
_BASE = (
    _WS,
    'string ::= "\\"" char* "\\""',
    'char ::= [^"\\\\\\x00-\\x1F] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})',
    'integer ::= "-"? ("0" | [1-9] [0-9]{0,15})',
    'number ::= integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,4})?',
    'boolean ::= "true" | "false"',
    'null ::= "null"',
    "value ::= object | array | string | number | boolean | null",
    'object ::= "{" ws (string ws ":" ws value (ws "," ws string ws ":" ws value)*)? ws "}"',
    'array ::= "[" ws (value (ws "," ws value)*)? ws "]"',
)
_PRIMITIVES = {"string", "integer", "number", "boolean", "null"}
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def literal(text: str) -> str:
    """``text`` as a GBNF literal (matched character for character)."""
    out = (_ESCAPES.get(c) or (f"\\x{ord(c):02X}" if ord(c) < 0x20 else c) for c in text)
    return '"' + "".join(out) + '"'


class _Rules:
    def __init__(self) -> None:
        self.rules: list[str] = list(_BASE)

    def add(self, name: str, body: str) -> str:
        self.rules.append(f"{name} ::= {body}")
        return name

    def value(self, schema: Any, name: str) -> str:
        """The rule (a name or an inline expression) for a value of ``schema``."""
        if not isinstance(schema, Mapping):
            return "value"
        if "const" in schema:
            return literal(json.dumps(schema["const"], ensure_ascii=False))
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return self.add(
                name, " | ".join(literal(json.dumps(v, ensure_ascii=False)) for v in schema["enum"])
            )
        kind = schema.get("type")
        if isinstance(kind, list):
            kinds = [self.value({**schema, "type": k}, f"{name}-{i}") for i, k in enumerate(kind)]
            return self.add(name, " | ".join(kinds))
        if kind in _PRIMITIVES:
            return str(kind)
        if kind == "array":
            item = self.value(schema.get("items"), f"{name}-item")
            return self.add(name, f'"[" ws ({item} (ws "," ws {item})*)? ws "]"')
        if kind == "object" and isinstance(schema.get("properties"), Mapping):
            return self.obj(schema, name)
        if kind == "object":
            return "object"
        return "value"

    def obj(self, schema: Mapping[str, Any], name: str) -> str:
        """An object: its required properties in ``required``'s order, then any others."""
        props: Mapping[str, Any] = schema.get("properties") or {}
        listed = schema.get("required")
        required = [k for k in listed if k in props] if isinstance(listed, list) else []
        optional = [k for k in props if k not in required]

        def member(key: str, i: int) -> str:
            rule = self.value(props[key], f"{name}-{i}")
            return f'{literal(json.dumps(key, ensure_ascii=False))} ws ":" ws {rule}'

        index = {k: i for i, k in enumerate(props)}
        head = ' ws "," ws '.join(member(k, index[k]) for k in required)
        if optional:
            extra = self.add(f"{name}-opt", " | ".join(f"({member(k, index[k])})" for k in optional))
            body = f'{head} (ws "," ws {extra})*' if head else f'({extra} (ws "," ws {extra})*)?'
        else:
            body = head
        return self.add(name, f'"{{" ws {body} ws "}}"')


def call_grammar(tools: Sequence[ToolSpec], close: str, blocks: Mapping[str, Block] | None = None) -> str:
    """GBNF for the rest of a call once its opening tag is written: one call of an offered tool,
    then ``close`` (the format's closing tag), then, for a tool in ``blocks``, its edit block
    (its block properties are not in the call's JSON: ADR 0440). ``tools`` must not be empty."""
    if not tools:
        raise ValueError("a call grammar needs at least one tool")
    rules = _Rules()
    alts = []
    for n, t in enumerate(tools):
        block = (blocks or {}).get(t.name)
        args = rules.value(dict((shown(t) if block else t).parameters), f"args{n}")
        name = literal(json.dumps(t.name, ensure_ascii=False))
        alts.append(rules.add(f"call{n}", f'{name} ws "," ws "\\"arguments\\"" ws ":" ws {args}'))
        if block is not None:
            rules.rules += block_grammar(block, f"block{n}")
    if not blocks:
        rules.add("call", f'"{{" ws "\\"name\\"" ws ":" ws ({" | ".join(alts)}) ws "}}"')
        rules.add("root", f"ws call ws {literal(close)}")
        return "\n".join(rules.rules) + "\n"
    ends = [
        f'{alt} ws "}}" ws {literal(close)}' + (f" block{n}" if tools[n].name in blocks else "")
        for n, alt in enumerate(alts)
    ]
    rules.add("root", f'ws "{{" ws "\\"name\\"" ws ":" ws ({" | ".join(f"({e})" for e in ends)})')
    return "\n".join(rules.rules) + "\n"
