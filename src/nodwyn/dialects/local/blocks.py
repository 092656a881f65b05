"""Edit blocks (pure): a tool's text arguments written as plain text after its call, not in JSON.

Code inside a JSON string is hard for a small model: every newline and quote must be escaped
(issue 25, item 3). A tool may mark string properties of its schema with ``"x-block"``; a local
prompt format whose ``edits`` is ``"blocks"`` then lists the tool without them, and the model
writes them after the call's closing tag, as one of two blocks:

* ``"fence"`` (one property, a whole file): a fenced code block, ``\\n```\\nTEXT```, TEXT being
  the property's value exactly (its lines with their newlines);
* ``"search"`` and ``"replace"`` (a pair): ``\\n<<<<<<< SEARCH\\nOLD\\n=======\\nNEW\\n>>>>>>>
  REPLACE``, OLD and NEW the two values (whole lines, without the newline after the last).

``read_block`` reads one after a call; ``render_block`` writes the value back as the same text, so
a reply goes back to the model as it wrote it (its KV cache still serves it) and replay, which
renders from the log, rebuilds what the model was shown. ``block_grammar`` is the GBNF the call's
grammar continues with, so a call a model completes under it always has its block.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from nodwyn.values.request import BLOCK_KEY, ToolSpec

FENCE_OPEN = "\n```\n"
FENCE_CLOSE = "```"
SEARCH = "\n<<<<<<< SEARCH\n"
DIVIDER = "=======\n"
REPLACE = ">>>>>>> REPLACE"


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """The block a tool's call is followed by: ``fence`` (``field``) or ``search`` (``old``,
    ``new``)."""

    kind: Literal["fence", "search"]
    field: str = ""
    old: str = ""
    new: str = ""

    @property
    def fields(self) -> tuple[str, ...]:
        return (self.field,) if self.kind == "fence" else (self.old, self.new)


def block_of(spec: ToolSpec) -> Block | None:
    """The block ``spec``'s schema marks (None: a tool whose arguments are all JSON)."""
    props = spec.parameters.get("properties")
    if not isinstance(props, Mapping):
        return None
    marks: dict[str, str] = {}
    for key, schema in props.items():
        if isinstance(schema, Mapping) and isinstance(schema.get(BLOCK_KEY), str):
            marks[schema[BLOCK_KEY]] = key
    if "fence" in marks and len(marks) == 1:
        return Block(kind="fence", field=marks["fence"])
    if set(marks) == {"search", "replace"}:
        return Block(kind="search", old=marks["search"], new=marks["replace"])
    return None


def blocks_of(tools: tuple[ToolSpec, ...]) -> dict[str, Block]:
    """The offered tools that take a block, by name."""
    return {t.name: b for t in tools if (b := block_of(t)) is not None}


def shown(spec: ToolSpec) -> ToolSpec:
    """``spec`` as a block-taking format lists it: without its block properties."""
    block = block_of(spec)
    if block is None:
        return spec
    params: dict[str, Any] = dict(spec.parameters)
    params["properties"] = {k: v for k, v in params["properties"].items() if k not in block.fields}
    if isinstance(params.get("required"), list):
        params["required"] = [k for k in params["required"] if k not in block.fields]
    return ToolSpec(name=spec.name, description=spec.description, parameters=params)


def render_block(block: Block, arguments: Mapping[str, Any]) -> str:
    """The text that follows the call for ``arguments`` (missing or non-string values: empty)."""

    def text(key: str) -> str:
        value = arguments.get(key)
        return value if isinstance(value, str) else ""

    if block.kind == "fence":
        return FENCE_OPEN + text(block.field) + FENCE_CLOSE
    old, new = text(block.old), text(block.new)
    return SEARCH + (old + "\n" if old else "") + DIVIDER + (new + "\n" if new else "") + REPLACE


@dataclass(frozen=True, slots=True, kw_only=True)
class Read:
    """What ``read_block`` found: the values (None if no block of that kind starts there) and
    where the text after it starts."""

    values: dict[str, str] | None
    end: int
    problem: str = ""  # why there is no block, said to the model


def _fence(text: str, i: int, final: bool, field: str) -> Read | None:
    """A fenced block at ``i`` (its opening line may name a language), its text the ``field``'s."""
    start = text.find("\n", i + 3) + 1
    close = text.find(FENCE_CLOSE, start) if start > 0 else -1
    if close < 0:
        return None if not final else Read(values=None, end=len(text), problem="the code block is not closed")
    return Read(values={field: text[start:close]}, end=close + len(FENCE_CLOSE))


def _search(text: str, start: int, final: bool) -> Read | None:
    """The lines of a SEARCH/REPLACE block from ``start`` (after its ``<<<<<<< SEARCH`` line)."""
    if text.startswith(DIVIDER, start):
        old, new_start = "", start + len(DIVIDER)
    else:
        d = text.find("\n" + DIVIDER, start)
        if d < 0:
            return None if not final else Read(values=None, end=len(text), problem=_NO_DIVIDER)
        old, new_start = text[start:d], d + 1 + len(DIVIDER)
    if text.startswith(REPLACE, new_start):
        return Read(values={"old": old, "new": ""}, end=new_start + len(REPLACE))
    r = text.find("\n" + REPLACE, new_start)
    if r < 0:
        return None if not final else Read(values=None, end=len(text), problem=_NO_DIVIDER)
    return Read(values={"old": old, "new": text[new_start:r]}, end=r + 1 + len(REPLACE))


_NO_DIVIDER = "the block needs a ======= line after its SEARCH lines and >>>>>>> REPLACE after the new ones"


def skip_space(text: str, i: int) -> int:
    """The index of the first character at or after ``i`` that is not whitespace."""
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def read_block(text: str, at: int, block: Block, *, final: bool) -> Read | None:
    """The block after a call that ends at ``at``; None while it may still be coming (``final``
    False). A fence around a SEARCH/REPLACE block is read through."""
    i = skip_space(text, at)
    rest = text[i:]
    if not rest:
        return None if not final else Read(values=None, end=len(text), problem="nothing follows the call")
    if block.kind == "fence":
        if not rest.startswith("```"):
            if not final and "```".startswith(rest):
                return None
            return Read(values=None, end=i, problem="no code block follows the call")
        return _fence(text, i, final, block.field)
    fenced = rest.startswith("```")
    j = text.find("\n", i) + 1 if fenced else i
    if fenced and j <= 0:
        return None if not final else Read(values=None, end=len(text), problem="the code block is not closed")
    marker = SEARCH.lstrip("\n")
    if not text.startswith(marker, j):
        if not final and marker.startswith(text[j:]):
            return None
        return Read(values=None, end=i, problem="no <<<<<<< SEARCH block follows the call")
    got = _search(text, j + len(marker), final)
    if got is None or got.values is None:
        return got
    end = got.end
    if fenced:
        k = skip_space(text, end)
        if text.startswith(FENCE_CLOSE, k):
            end = k + len(FENCE_CLOSE)
        elif not final and FENCE_CLOSE.startswith(text[k:]):
            return None
    return Read(values={block.old: got.values["old"], block.new: got.values["new"]}, end=end)


def block_grammar(block: Block, name: str) -> tuple[str, ...]:
    """GBNF rules for ``block`` after the closing tag (``name`` the rule to define)."""
    if block.kind == "fence":  # not empty, and its first line not a fence (greedy decoding
        # closes an empty block at once when it meant the call to be the whole reply)
        return (
            f'{name} ::= "\\n```\\n" [^`\\n] {name}-body "```"',
            f'{name}-body ::= ([^`] | "`" [^`] | "``" [^`])*',
        )
    return (  # at least one SEARCH line, not blank; the new lines may be none (a deletion)
        f'{name} ::= "\\n<<<<<<< SEARCH\\n" {name}-first {name}-line* "=======\\n" {name}-line* '
        '">>>>>>> REPLACE"',
        f'{name}-first ::= [^=>\\n] [^\\n]* "\\n"',
        f'{name}-line ::= ([^=>\\n] [^\\n]*)? "\\n"',
    )
