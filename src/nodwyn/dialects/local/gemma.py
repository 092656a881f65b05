"""Gemma's turn format (pure), for the local Gemma 3 270M *base* model (``local-tiny``).

The GGUF carries no chat template, so we render Gemma's turn markers ourselves, one turn per
message; Gemma has no system role, so the system prompt and the tool list open the first user turn.
Calls are asked for as ``<tool_call>{…}</tool_call>`` and read back by ``calls`` like any local
model's; results go back as ``<tool_result>`` blocks in a user turn.
"""

from __future__ import annotations

import json

from nodwyn.dialects.local.base import Piece, call_json, user_text
from nodwyn.dialects.local.calls import CALL_CLOSE, CALL_OPEN
from nodwyn.values.content import AssistantMessage, Message, ToolMessage
from nodwyn.values.request import Request, ToolSpec

START = "<start_of_turn>"
END = "<end_of_turn>"


def _tools_text(tools: tuple[ToolSpec, ...]) -> str:
    if not tools:
        return ""
    lines = [
        "# Tools",
        f'To call a tool, write {CALL_OPEN}{{"name": NAME, "arguments": {{...}}}}{CALL_CLOSE}.',
    ]
    for t in tools:
        schema = json.dumps(t.parameters, sort_keys=True, separators=(",", ":"))
        lines.append(f"- {t.name}: {t.description} Arguments: {schema}")
    return "\n".join(lines)


def _assistant_text(m: AssistantMessage) -> str:
    if m.raw is not None and not m.calls:
        return m.raw
    return m.text + "".join(f"{CALL_OPEN}{call_json(c)}{CALL_CLOSE}" for c in m.calls)


def _role_text(m: Message) -> tuple[str, str]:
    if isinstance(m, AssistantMessage):
        return "model", _assistant_text(m)
    if isinstance(m, ToolMessage):
        status = " error" if m.error else ""
        return "user", f'<tool_result name="{m.name}" id="{m.call_id}"{status}>\n{m.text}\n</tool_result>'
    return "user", user_text(m)


def _turn(role: str, text: str, preamble: str = "") -> list[Piece]:
    """One turn; ``preamble`` (the system prompt and tools) opens it as a piece of its own, so its
    tokens are the same whatever the first message says."""
    return [
        Piece(START, special=True),
        Piece(f"{role}\n"),
        Piece(f"{preamble}\n\n" if preamble else ""),
        Piece(text),
        Piece(END, special=True),
        Piece("\n"),
    ]


def _preamble(request: Request) -> str:
    return "\n\n".join(s for s in (request.system, _tools_text(request.tools)) if s)


class Gemma:
    name = "gemma"
    stops: tuple[str, ...] = (END, START)
    call_open = CALL_OPEN
    call_close = CALL_CLOSE
    edits = "json"  # the base model (local-tiny): its tools are offered as they are

    def shared(self, request: Request) -> int:
        """The first user turn's start and the preamble (a first message from the model gets a
        turn of the preamble alone, which ends the same way)."""
        return 3 if _preamble(request) else 0

    def render(self, request: Request) -> tuple[Piece, ...]:
        """Every message is its own turn, so appending messages extends the prompt."""
        preamble = _preamble(request)
        turns = [_role_text(m) for m in request.messages]
        pieces: list[Piece] = []
        if preamble:  # it opens the first user turn, or a turn of its own before the model's
            first = turns.pop(0)[1] if turns and turns[0][0] == "user" else ""
            pieces += _turn("user", first, preamble)
        for role, text in turns:
            pieces += _turn(role, text)
        pieces += [Piece(START, special=True), Piece("model\n")]
        return tuple(p for p in pieces if p.text)


GEMMA = Gemma()
