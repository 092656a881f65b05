"""The grammar a local model's calls are decoded under, and what becomes of a call it began but did
not write whole (pure). That llama.cpp reads the grammar and a model decoded under it writes calls
that parse is in tests/transport/test_local_calls.py."""

from __future__ import annotations

import json
import re

from nodwyn.agent.tools import builtin_tools, catalog
from nodwyn.dialects.local import parse_calls
from nodwyn.dialects.local.grammar import call_grammar, literal
from nodwyn.values.request import ToolSpec

EDIT = ToolSpec(
    name="fs-edit",
    description="Replace text.",
    parameters={
        "type": "object",
        "properties": {"new": {"type": "string"}, "old": {"type": "string"}, "path": {"type": "string"}},
        "required": ["path", "old", "new"],
    },
)
FIND = ToolSpec(
    name="fs-find",
    description="Find files.",
    parameters={
        "type": "object",
        "properties": {
            "glob": {"type": "string"},
            "max": {"type": "integer"},
            "mode": {"enum": ["a", "b"]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    },
)


def rules(text: str) -> dict[str, str]:
    out = {}
    for line in text.strip().splitlines():
        name, _, body = line.partition(" ::= ")
        assert name and body, line
        assert name not in out, f"rule {name} defined twice"
        out[name] = body
    return out


def test_the_grammar_names_each_offered_tool_and_its_arguments_in_the_order_shown() -> None:
    g = rules(call_grammar((EDIT, FIND), "</tool_call>"))
    assert g["root"] == 'ws call ws "</tool_call>"'
    assert g["call"] == '"{" ws "\\"name\\"" ws ":" ws (call0 | call1) ws "}"'
    assert g["call0"].startswith('"\\"fs-edit\\"" ws "," ws "\\"arguments\\"" ws ":" ws args0')
    # required properties in the order `required` lists them (as the prompt shows them), all present
    assert g["args0"] == (
        '"{" ws "\\"path\\"" ws ":" ws string ws "," ws "\\"old\\"" ws ":" ws string ws "," ws '
        '"\\"new\\"" ws ":" ws string ws "}"'
    )
    # no property required: any of them, typed; an enum is its values; an array its item type
    assert g["args1"] == '"{" ws (args1-opt (ws "," ws args1-opt)*)? ws "}"'
    assert '"\\"max\\"" ws ":" ws integer' in g["args1-opt"]
    assert g["args1-2"] == '"\\"a\\"" | "\\"b\\""'
    assert g["args1-3"] == '"[" ws (string (ws "," ws string)*)? ws "]"'
    # a JSON string: no raw control character (a newline in a file's text must be written \n)
    assert g["char"] == '[^"\\\\\\x00-\\x1F] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})'


def test_every_rule_the_grammar_uses_is_defined() -> None:
    tools = catalog(builtin_tools().values())
    g = rules(call_grammar(tools, "</tool_call>"))
    used = set()
    for body in g.values():
        stripped = re.sub(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]', " ", body)
        used |= set(re.findall(r"[A-Za-z][\w-]*", stripped))
    assert used <= set(g), used - set(g)
    assert len([k for k in g if re.fullmatch(r"call\d+", k)]) == len(tools)


def test_literals_escape_what_gbnf_reads() -> None:
    assert literal('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'
    assert literal("\x01") == '"\\x01"'


def test_a_tagged_call_not_written_whole_is_a_call_the_runner_refuses_never_the_answer() -> None:
    """An fs-write whose content string never closed (an unescaped triple quote cut it short), as
    the issue saw it printed as the answer: now a call naming fs-write with its arguments as
    written, which do not parse; the reply's prose is only what came before it."""
    text = (
        'I will add it.\n<tool_call>\n{"name": "fs-write", "arguments": {"path": "cli.py", '
        '"content": "import argparse\n"""doc"""\n'
    )
    prose, calls = parse_calls(text, "p", {"fs-write"})
    assert prose == "I will add it."
    assert [c.name for c in calls] == ["fs-write"]
    assert calls[0].arguments.startswith('{"path": "cli.py", "content": "import argparse')
    try:
        json.loads(calls[0].arguments)
        raise AssertionError("the arguments should not parse")
    except json.JSONDecodeError:
        pass
    # closed tags around an unreadable object: the same; no name at all: a call naming no tool
    prose, calls = parse_calls('<tool_call>{"name": "shell", "arguments": {"command": "ls"</tool_call>', "p")
    assert prose == "" and calls[0].name == "shell" and calls[0].arguments == '{"command": "ls"'
    prose, calls = parse_calls("<tool_call>\nread calc.py please\n</tool_call>", "p")
    assert prose == "" and calls[0].name == "" and calls[0].arguments == "read calc.py please"
