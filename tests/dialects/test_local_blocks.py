"""Edit blocks (ADR 0440, pure): a local model writes fs-write's content and fs-edit's old/new as
plain text after the call; read back into the call's arguments, rendered back as written, listed
without them, and held to their shape by the call's grammar. That a call without its block comes
back to the model as a tool error is in tests/agent/test_named_files.py."""

from __future__ import annotations

import json
import re

import pytest

from nodwyn.agent.tools import builtin_tools, catalog
from nodwyn.dialects.local import blocks_of, parse_calls, reply_end, text_of
from nodwyn.dialects.local.chatml import CHATML
from nodwyn.dialects.local.grammar import call_grammar
from nodwyn.values.content import AssistantMessage, TextPart, UserMessage
from nodwyn.values.request import Request

TOOLS = catalog(builtin_tools("blocks").values())
BLOCKS = blocks_of(TOOLS)
NAMES = {t.name for t in TOOLS}

WRITE = (
    '<tool_call>\n{"name": "fs-write", "arguments": {"path": "slug.py"}}\n</tool_call>\n```\n'
    'def slugify(text):\n    return "-".join(text.lower().split())  # "quoted" \\n kept\n```'
)
EDIT = (
    'I will fix it.\n```json\n{"name": "fs-edit", "arguments": {"path": "pages.py"}}\n```\n'
    "<<<<<<< SEARCH\n    return items // per_page\n=======\n    return -(-items // per_page)\n"
    ">>>>>>> REPLACE"
)


def test_the_block_after_a_call_is_its_text_arguments_exactly() -> None:
    prose, calls = parse_calls(WRITE, "p", NAMES, BLOCKS)
    assert prose == "" and [c.name for c in calls] == ["fs-write"]
    assert json.loads(calls[0].arguments) == {
        "path": "slug.py",
        "content": 'def slugify(text):\n    return "-".join(text.lower().split())  # "quoted" \\n kept\n',
    }
    prose, calls = parse_calls(EDIT, "p", NAMES, BLOCKS)  # a fenced call, then SEARCH/REPLACE
    assert prose == "I will fix it."
    assert json.loads(calls[0].arguments) == {
        "path": "pages.py",
        "old": "    return items // per_page",
        "new": "    return -(-items // per_page)",
    }


def test_a_reply_being_written_ends_after_the_block_not_after_the_call() -> None:
    for text in (WRITE, EDIT):
        cut = (
            text.index("</tool_call>") + len("</tool_call>")
            if "<tool_call>" in text
            else text.index("}\n```") + 5
        )
        assert reply_end(text[:cut], NAMES, BLOCKS) is None  # the block is still to come
        assert reply_end(text[:-3], NAMES, BLOCKS) is None
        assert reply_end(text + "\nmore", NAMES, BLOCKS) == len(text)
    # without blocks (a format whose edits are JSON) the same call ends at its closing tag
    bare = WRITE[: WRITE.index("</tool_call>") + len("</tool_call>")]
    assert reply_end(WRITE, NAMES) == len(bare)


def test_a_call_with_no_block_after_it_keeps_its_json_arguments_for_the_runner_to_refuse() -> None:
    text = '<tool_call>\n{"name": "fs-write", "arguments": {"path": "a.py"}}\n</tool_call>'
    _, calls = parse_calls(text, "p", NAMES, BLOCKS)
    assert json.loads(calls[0].arguments) == {"path": "a.py"}
    # an unclosed block at the end of a finished reply: no block either
    _, calls = parse_calls(text + "\n```\nprint(1)\n", "p", NAMES, BLOCKS)
    assert json.loads(calls[0].arguments) == {"path": "a.py"}
    # content written in the JSON after all is taken as it is
    text = '<tool_call>\n{"name": "fs-write", "arguments": {"path": "a.py", "content": "x\\n"}}\n</tool_call>'
    _, calls = parse_calls(text, "p", NAMES, BLOCKS)
    assert json.loads(calls[0].arguments) == {"path": "a.py", "content": "x\n"}


def _request(*replies: AssistantMessage) -> Request:
    return Request(system="S", tools=TOOLS, messages=(UserMessage(parts=(TextPart(text="go"),)), *replies))


def test_a_reply_goes_back_as_the_model_wrote_it_and_the_tools_are_listed_without_the_block() -> None:
    for written in (
        WRITE,
        EDIT.replace("I will fix it.\n```json\n", "<tool_call>\n").replace("}\n```\n<", "}\n</tool_call>\n<"),
    ):
        prose, calls = parse_calls(written, "p", NAMES, BLOCKS)
        prompt = text_of(CHATML.render(_request(AssistantMessage(text=prose, calls=calls))))
        assert prompt.endswith("<|im_start|>assistant\n" + written + "<|im_end|>\n<|im_start|>assistant\n")
    listing = text_of(CHATML.render(_request()))
    write = next(line for line in listing.splitlines() if '"name": "fs-write"' in line)
    assert '"properties": {"path"' in write and '"content"' not in write and "x-block" not in write
    assert '"required": ["path"]' in write and "fenced code block" in write
    edit = next(line for line in listing.splitlines() if '"name": "fs-edit"' in line)
    assert '"old"' not in edit and "<<<<<<< SEARCH" in edit


def test_the_grammar_holds_the_call_to_its_bare_arguments_and_then_its_block() -> None:
    g = dict(
        line.split(" ::= ", 1) for line in call_grammar(TOOLS, "</tool_call>", BLOCKS).strip().splitlines()
    )
    write = next(n for n, t in enumerate(TOOLS) if t.name == "fs-write")
    assert '"\\"content\\""' not in g[f"args{write}"]
    assert f'(call{write} ws "}}" ws "</tool_call>" block{write})' in g["root"]
    assert g[f"block{write}"] == f'"\\n```\\n" [^`\\n] block{write}-body "```"'
    edit = next(n for n, t in enumerate(TOOLS) if t.name == "fs-edit")
    assert "SEARCH" in g[f"block{edit}"] and "REPLACE" in g[f"block{edit}"]
    used = set()
    for body in g.values():
        stripped = re.sub(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]', " ", body)
        used |= set(re.findall(r"[A-Za-z][\w-]*", stripped))
    assert used <= set(g), used - set(g)
    grammar = pytest.importorskip("llama_cpp.llama_grammar")
    grammar.LlamaGrammar.from_string(call_grammar(TOOLS, "</tool_call>", BLOCKS), verbose=False)


def test_json_edit_tools_are_unchanged() -> None:
    assert blocks_of(catalog(builtin_tools().values())) == {}
    assert set(BLOCKS) == {"fs-write", "fs-edit"}
