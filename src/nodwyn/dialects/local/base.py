"""What a local model's prompt format is: a request rendered as pieces of text, and a reply read back.

A prompt is a sequence of ``Piece``s, each tokenized on its own: ``special`` pieces are the format's
own markup and the model's own replies (their special tokens, such as ``<|im_end|>``, are read as
such); the other pieces are what people, files and tools wrote, where such a string is only text.
A request that appends messages renders to the pieces of its predecessor followed by more pieces,
so its tokens extend the previous prompt's token for token and the KV cache serves them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from nodwyn.dialects.local.blocks import Block, render_block
from nodwyn.values.arguments import ArgumentsError, load_arguments
from nodwyn.values.content import ImagePart, TextPart, ToolCall, UserMessage
from nodwyn.values.request import Request


@dataclass(frozen=True, slots=True)
class Piece:
    text: str
    special: bool = False  # tokenized with the model's special tokens recognised


class PromptFormat(Protocol):
    name: str
    stops: tuple[str, ...]  # special tokens that end a reply
    call_open: str  # what starts a call in a reply (the backend's grammar starts after it)
    call_close: str  # what ends one
    edits: str  # "json", "search" or "blocks": which edit tools write their text after the call (ADR 0440)

    def render(self, request: Request) -> tuple[Piece, ...]:
        """The request as the prompt the model continues (ending with the assistant's turn opened)."""
        ...

    def shared(self, request: Request) -> int:
        """How many of ``render(request)``'s first pieces depend only on its system prompt and
        tools: the prefix every session of one recipe shares (its KV state is saved once)."""
        ...


def user_text(m: UserMessage) -> str:
    out = []
    for p in m.parts:
        if isinstance(p, TextPart):
            out.append(p.text)
        elif isinstance(p, ImagePart):
            out.append(f"[image {p.digest} not shown: this model takes no images]")
    return "\n".join(out)


def split_tags(text: str, tags: Sequence[str]) -> list[Piece]:
    """``text`` as plain pieces with each of ``tags`` (special tokens of the model) its own special
    piece: the tool-call tags a model writes are read back as the tokens it wrote, while any other
    special-looking string in its text (quoted from a file, say) stays text."""
    pieces: list[Piece] = []
    rest = text
    while rest:
        hits = [(rest.find(t), t) for t in tags if t in rest]
        if not hits:
            pieces.append(Piece(rest))
            break
        at, tag = min(hits)
        if at:
            pieces.append(Piece(rest[:at]))
        pieces.append(Piece(tag, special=True))
        rest = rest[at + len(tag) :]
    return pieces


def call_json(call: ToolCall) -> str:
    """``{"name": …, "arguments": …}`` as chat templates write a call (arguments as a JSON value)."""
    try:
        if not call.arguments.strip():
            raise ArgumentsError("no arguments")  # written as the empty string, as always
        args = json.dumps(load_arguments(call.arguments), ensure_ascii=False)
    except ArgumentsError:  # not JSON (or too deep or long to read): the text as a string
        args = json.dumps(call.arguments, ensure_ascii=False)
    return f'{{"name": {json.dumps(call.name, ensure_ascii=False)}, "arguments": {args}}}'


def call_parts(call: ToolCall, block: Block | None) -> tuple[str, str]:
    """The call's JSON (``call_json``) and, for a tool taking an edit block, the block after it:
    its block properties leave the JSON and are written as the block (``blocks.render_block``)."""
    try:
        args = load_arguments(call.arguments) if block is not None and call.arguments.strip() else {}
    except ArgumentsError:
        args = None
    if block is None or not isinstance(args, dict):
        return call_json(call), ""
    kept = {k: v for k, v in args.items() if k not in block.fields}
    bare = ToolCall(id=call.id, name=call.name, arguments=json.dumps(kept, ensure_ascii=False))
    return call_json(bare), render_block(block, args)


def text_of(pieces: Sequence[Piece]) -> str:
    """The prompt as one string (for people and tests; the backend tokenizes piece by piece)."""
    return "".join(p.text for p in pieces)


def shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
