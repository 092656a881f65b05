"""ChatML as Qwen2.5's chat template writes it (pure), for the local Qwen2.5-Coder model.

    <|im_start|>system
    SYSTEM

    # Tools
    … <tools>
    {"type": "function", "function": {"name": …, "description": …, "parameters": …}}
    </tools> … <|im_end|>
    <|im_start|>user
    TASK<|im_end|>
    <|im_start|>assistant
    REPLY (its calls as <tool_call>\\n{"name": …, "arguments": …}\\n</tool_call>)<|im_end|>
    <|im_start|>user
    <tool_response>
    RESULT
    </tool_response><|im_end|>
    <|im_start|>assistant

The tools block is the template's own words and layout (each tool as the template's ``tojson`` of
the function; the schema's keys sorted, so a tool's JSON never depends on dict order). Consecutive tool
results share one user turn, each in ``<tool_response>`` tags, as the template groups them; an error
result starts with ``Error:``. A reply with calls goes back as the template writes one (its prose,
then each call in ``<tool_call>`` tags), whatever form the model wrote them in: shown its own fenced
or bare JSON before a result, Qwen2.5-Coder-1.5B calls again instead of answering (ADR 0161). A reply
without calls goes back exactly as the model wrote it (``raw``). A request with no tools has no
tools block (the template's other branch), which changes its first turn.
"""

from __future__ import annotations

import json
from itertools import groupby

from nodwyn.dialects.local.base import Piece, call_parts, split_tags, user_text
from nodwyn.dialects.local.blocks import Block, blocks_of, shown
from nodwyn.dialects.local.calls import CALL_CLOSE, CALL_OPEN
from nodwyn.values.content import AssistantMessage, ToolMessage, UserMessage
from nodwyn.values.request import Request, ToolSpec

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
END_OF_TEXT = "<|endoftext|>"

TOOLS_HEAD = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_TAIL = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n"
)
TOOLS_FORMAT = '\n{"name": <function-name>, "arguments": <args-json-object>}\n'


def _dumps(value: object, *, sort: bool = False) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=sort)


def _required_first(parameters: dict[str, object]) -> dict[str, object]:
    """The schema with sorted keys, except its properties: the required ones first, in the order
    ``required`` names them, then the rest sorted. A small model writes a call's arguments in the
    order it was shown them (sorted, fs-edit's ``new`` came before ``old`` and ``path``; ADR 0165)."""
    out: dict[str, object] = json.loads(_dumps(parameters, sort=True))
    props = out.get("properties")
    required = out.get("required")
    if isinstance(props, dict) and isinstance(required, list):
        order = [k for k in required if k in props] + sorted(k for k in props if k not in required)
        out["properties"] = {k: props[k] for k in order}
    return out


def tool_json(t: ToolSpec) -> str:
    """One tool as the template lists it: its keys in the template's order, the schema's sorted
    but for its properties, listed required first."""
    return (
        f'{{"type": "function", "function": {{"name": {_dumps(t.name)}, "description": '
        f'{_dumps(t.description)}, "parameters": {_dumps(_required_first(dict(t.parameters)))}}}}}'
    )


def _open(role: str) -> list[Piece]:
    return [Piece(IM_START, special=True), Piece(role)]


def _close() -> list[Piece]:
    return [Piece(IM_END, special=True), Piece("\n")]


def _system(request: Request) -> list[Piece]:
    pieces = [*_open("system\n"), Piece(request.system)]
    if request.tools:
        listed = "".join("\n" + tool_json(shown(t)) for t in request.tools)
        pieces += [
            Piece(TOOLS_HEAD + listed + TOOLS_TAIL),
            Piece(CALL_OPEN, special=True),
            Piece(TOOLS_FORMAT),
            Piece(CALL_CLOSE, special=True),
        ]
    return pieces + _close()


def _reply(m: AssistantMessage, blocks: dict[str, Block]) -> list[Piece]:
    if m.raw is not None and not m.calls:
        return split_tags(m.raw, (CALL_OPEN, CALL_CLOSE))
    pieces = [Piece(m.text)] if m.text else []
    for call in m.calls:
        body, block = call_parts(call, blocks.get(call.name))
        pieces += [
            Piece("\n" if pieces else ""),  # "assistant\n" opened the turn
            Piece(CALL_OPEN, special=True),
            Piece("\n" + body + "\n"),
            Piece(CALL_CLOSE, special=True),
            Piece(block),  # an edit block, as the model wrote it after the call (ADR 0440)
        ]
    return pieces


def _result(m: ToolMessage) -> str:
    text = f"Error: {m.text}" if m.error and not m.text.startswith("Error") else m.text
    return f"\n<tool_response>\n{text}\n</tool_response>"


class ChatML:
    name = "chatml"
    stops: tuple[str, ...] = (IM_END, END_OF_TEXT, IM_START)
    call_open = CALL_OPEN
    call_close = CALL_CLOSE
    edits = "search"  # fs-edit as SEARCH/REPLACE, fs-write in JSON (measured: ADR 0440)

    def shared(self, request: Request) -> int:
        return len([p for p in _system(request) if p.text])

    def render(self, request: Request) -> tuple[Piece, ...]:
        pieces = _system(request)
        blocks = blocks_of(request.tools)
        for results, run in groupby(request.messages, key=lambda m: isinstance(m, ToolMessage)):
            if results:  # a run of results shares one user turn
                pieces += [*_open("user"), *(Piece(_result(m)) for m in run if isinstance(m, ToolMessage))]
                pieces += _close()
                continue
            for m in run:
                if isinstance(m, UserMessage):
                    pieces += [*_open("user\n"), Piece(user_text(m)), *_close()]
                elif isinstance(m, AssistantMessage):
                    pieces += [*_open("assistant\n"), *_reply(m, blocks), *_close()]
        pieces += _open("assistant\n")
        return tuple(p for p in pieces if p.text)


CHATML = ChatML()
