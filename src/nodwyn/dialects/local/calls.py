"""Tool calls written as text by a local model (pure): found, cut at the first complete one, parsed.

A small instruction-tuned model writes a call in one of three ways, and all three are calls:

* tagged: ``<tool_call>{"name": …, "arguments": {…}}</tool_call>`` (what its chat template asks);
* fenced: a Markdown code block holding the object (`````json`` … `````);
* bare: the object on its own in the text;
* an element named after an offered tool, ``<fs-read path="calc.py"/>`` (its attributes the
  arguments), which it writes now and then.

The object is ``{"name": NAME, "arguments": {…}}`` (``"parameters"`` is taken for ``"arguments"``,
and arguments given as a JSON string are decoded). A JSON object of another shape is text, except
inside ``<tool_call>`` tags: what a model writes there is a call it began, so a block that does not
parse (its string never closed, cut at the output cap) is still a call, with the name it gives (or
none) and its arguments' text as written. The name and arguments are not judged here: the tool
runner checks them against the tool's schema and a bad call comes back to the model as an error
result, never shown as the answer.

A model may go on to write the result it expects (``<tool_response>…``): that is never a result.
Nothing from it on is read for calls, and ``reply_end`` tells the backend to stop generating there
(and after the first complete call: the call's real result is what the model should read next).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any

from nodwyn.dialects.local.blocks import Block, read_block, skip_space
from nodwyn.values.content import ToolCall

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
FABRICATED = "<tool_response>"
FENCE = "```"

_DECODER = json.JSONDecoder()
_WRAPPERS = frozenset({"<tools>", "</tools>"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Found:
    """One call in a reply: where its text starts and ends, and the call it makes."""

    start: int
    end: int
    name: str
    arguments: str


def _as_call(value: Any) -> tuple[str, str] | None:
    """``(name, arguments JSON)`` if ``value`` is a call object, else None."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        return None
    key = "arguments" if "arguments" in value else "parameters" if "parameters" in value else None
    if key is None:
        return None
    args = value[key]
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return value["name"], args  # the runner says what is wrong with it
    return value["name"], json.dumps(args, ensure_ascii=False)


def _found(start: int, end: int, call: tuple[str, str] | None) -> Found | None:
    return Found(start=start, end=end, name=call[0], arguments=call[1]) if call else None


def _object_at(text: str, i: int) -> tuple[Any, int] | None:
    """The JSON value starting at ``text[i]`` and the index after it, if one parses there."""
    try:
        return _DECODER.raw_decode(text, i)
    except json.JSONDecodeError:
        return None


def _tagged(text: str, i: int, final: bool) -> tuple[Found | None, int] | None:
    """A ``<tool_call>`` block at ``i``: the call (or None if its body is no call) and where it ends;
    None while the block is not closed (a finished reply's unclosed block ends with the reply)."""
    close = text.find(CALL_CLOSE, i + len(CALL_OPEN))
    if close < 0 and not final:
        return None
    close, end = (close, close + len(CALL_CLOSE)) if close >= 0 else (len(text), len(text))
    body = text[i + len(CALL_OPEN) : close].strip()
    if body.startswith(FENCE):  # a fence inside the tags
        body = body[len(FENCE) :]
        body = body[body.find("\n") + 1 :] if "\n" in body else ""
        body = body.rstrip().removesuffix(FENCE)
    parsed = _object_at(body, skip_space(body, 0)) if body else None
    call = _as_call(parsed[0]) if parsed is not None else None
    # not a call object: a call the model began but did not write whole (the runner says what is wrong)
    name, arguments = call if call is not None else _unreadable(body)
    return Found(start=i, end=end, name=name, arguments=arguments), end


_NAME = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_ARGUMENTS = re.compile(r'"(?:arguments|parameters)"\s*:\s*')


def _unreadable(body: str) -> tuple[str, str]:
    """A tagged call whose text is not a whole call object: the tool it names, if it names one,
    and the text of its arguments as written (or the whole text when it names none), which the
    tool runner refuses with what is wrong and the shape it expects."""
    name = _NAME.search(body)
    if name is None:
        return "", body
    args = _ARGUMENTS.search(body, name.end()) or _ARGUMENTS.search(body)
    text = body[args.end() :] if args is not None else body
    if args is not None:  # the call object's own closing brace is not the arguments'
        stripped = text.rstrip()
        if stripped.endswith("}}"):
            text = stripped[:-1]
    try:
        return json.loads(f'"{name.group(1)}"'), text
    except json.JSONDecodeError:
        return name.group(1), text


def _past_fence(text: str, start: int) -> tuple[None, int] | None:
    """Skip a code block that holds no call: to after its closing fence (None while it is open)."""
    close = text.find(FENCE, start)
    return (None, close + len(FENCE)) if close >= 0 else None


def _fenced(text: str, i: int, final: bool) -> tuple[Found | None, int] | None:
    """A code fence at ``i``: if its body is one call object, the call and the index after the
    closing fence; a block holding anything else is skipped whole. None while it is open (a
    finished reply's open block holding a whole call object is a call)."""
    line_end = text.find("\n", i + len(FENCE))
    if line_end < 0:
        return (None, len(text)) if final else None
    info = text[i + len(FENCE) : line_end].strip()
    body_start = skip_space(text, line_end + 1)
    if info not in ("", "json", "JSON", "tool_call") or (body_start < len(text) and text[body_start] != "{"):
        return _past_fence(text, line_end + 1) or ((None, len(text)) if final else None)
    parsed = _object_at(text, body_start) if body_start < len(text) else None
    if parsed is None:
        return _past_fence(text, body_start) or ((None, len(text)) if final else None)
    call = _as_call(parsed[0])
    after = skip_space(text, parsed[1])
    if text.startswith(FENCE, after):
        end = after + len(FENCE)
    elif after >= len(text) or FENCE.startswith(text[after:]):
        if not final:
            return None  # the closing fence has not come yet
        end = len(text)
    else:
        return _past_fence(text, after) or ((None, len(text)) if final else None)
    return _found(i, end, call), end


_ELEMENT = re.compile(r'<([A-Za-z][\w.-]*)((?:\s+[A-Za-z_][\w-]*\s*=\s*"[^"]*")*)\s*/>')
_ATTRIBUTE = re.compile(r'([A-Za-z_][\w-]*)\s*=\s*"([^"]*)"')


def _element(text: str, i: int, tools: Collection[str]) -> Found | None:
    """``<fs-read path="a.txt"/>``: an element named after an offered tool, its attributes the
    arguments (strings; the runner says if one should be another type)."""
    m = _ELEMENT.match(text, i)
    if m is None or m.group(1) not in tools:
        return None
    args = {k: html.unescape(v) for k, v in _ATTRIBUTE.findall(m.group(2))}
    return Found(start=i, end=m.end(), name=m.group(1), arguments=json.dumps(args, ensure_ascii=False))


def _with_block(text: str, found: Found, block: Block, final: bool) -> Found | None:
    """``found`` with the edit block after it read into its arguments (ADR 0440): None while the
    block may still be coming; unchanged when no block follows (the runner says what is missing)."""
    try:
        args = json.loads(found.arguments)
    except json.JSONDecodeError:
        return found
    if not isinstance(args, dict) or all(k in args for k in block.fields):
        return found  # written in JSON after all: the tool takes it as it is
    got = read_block(text, found.end, block, final=final)
    if got is None:
        return None
    if got.values is None:
        return found
    merged = json.dumps({**args, **got.values}, ensure_ascii=False)
    return replace(found, end=got.end, arguments=merged)


def scan(
    text: str,
    *,
    final: bool = True,
    tools: Collection[str] = (),
    blocks: Mapping[str, Block] | None = None,
) -> tuple[list[Found], int | None]:
    """The calls in ``text`` (before any fabricated tool response), and where a reply should end:
    after its first complete call, or at a fabricated tool response; None if it may go on.

    ``final``: the reply is finished, so a block left open ends with it; while it is being
    generated (``final=False``) an open block is not read until it closes. ``blocks``: the
    offered tools whose text arguments follow the call as an edit block (``blocks.py``)."""
    fabricated = text.find(FABRICATED)
    limit = len(text) if fabricated < 0 else fabricated
    found: list[Found] = []
    i = 0
    while i < limit:
        starts = (
            text.find(CALL_OPEN, i),
            text.find(FENCE, i),
            text.find("{", i),
            _find_element(text, i, tools),
        )
        candidates = [p for p in starts if p >= 0]
        if not candidates:
            break
        i = min(candidates)
        if i >= limit:
            break
        if text.startswith(CALL_OPEN, i):
            got = _tagged(text[:limit], i, final)
        elif text.startswith(FENCE, i):
            got = _fenced(text[:limit], i, final)
        elif text.startswith("<", i):
            element = _element(text[:limit], i, tools)
            got = (element, element.end) if element is not None else (None, i + 1)
        else:
            parsed = _object_at(text[:limit], i)
            got = (None, i + 1) if parsed is None else (_found(i, parsed[1], _as_call(parsed[0])), parsed[1])
        if got is None:  # an open block: what follows is not read until it closes
            break
        call_found, i = got
        if call_found is not None and blocks and call_found.name in blocks:
            call_found = _with_block(text[:limit], call_found, blocks[call_found.name], final)
            if call_found is None:
                break
            i = call_found.end
        if call_found is not None:
            found.append(call_found)
    if found:
        return found, found[0].end
    return found, fabricated if fabricated >= 0 else None


def _find_element(text: str, i: int, tools: Collection[str]) -> int:
    """Where the next ``<tool …/>`` element naming an offered tool starts (-1: none)."""
    if not tools:
        return -1
    return next((m.start() for m in _ELEMENT.finditer(text, i) if m.group(1) in tools), -1)


def reply_end(
    text: str, tools: Collection[str] = (), blocks: Mapping[str, Block] | None = None
) -> int | None:
    """Where a reply being generated should stop: after its first complete call (and its edit
    block), or where it starts writing a tool response itself. None: let it go on."""
    return scan(text, final=False, tools=tools, blocks=blocks)[1]


def parse_calls(
    text: str, call_prefix: str, tools: Collection[str] = (), blocks: Mapping[str, Block] | None = None
) -> tuple[str, tuple[ToolCall, ...]]:
    """A reply's prose (its calls taken out, and anything from a fabricated tool response on) and
    its calls, with ids ``{call_prefix}-{n}``. ``tools``: the offered tools' names, which an
    element-style call (``<fs-read path="a"/>``) must name; ``blocks``: those taking an edit block."""
    found, _ = scan(text, tools=tools, blocks=blocks)
    fabricated = text.find(FABRICATED)
    prose_text = text if fabricated < 0 else text[:fabricated]
    kept: list[str] = []
    at = 0
    for f in found:
        kept.append(prose_text[at : f.start])
        at = f.end
    kept.append(prose_text[at:])
    prose = "".join(kept)
    if found:  # the template's list tags a model wraps its calls in are markup, not prose
        prose = "\n".join(line for line in prose.split("\n") if line.strip() not in _WRAPPERS)
    calls = tuple(
        ToolCall(id=f"{call_prefix}-{n}", name=f.name, arguments=f.arguments) for n, f in enumerate(found)
    )
    return prose.strip(), calls
