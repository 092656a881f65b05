"""Gemma's turn format for the local model (pure): a request rendered as one prompt, and a reply's
``<tool_call>`` blocks parsed back into calls.

The GGUF is the *base* model and carries no chat template, so we render Gemma's turn markers
ourselves, one turn per message: a request that appends messages renders to a prompt that extends
the previous one, which is what lets the backend reuse its KV cache (``shared_prefix``).
"""

from __future__ import annotations

import json
from typing import Any

from nodwyn.values.content import (
    AssistantMessage,
    ImagePart,
    Message,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from nodwyn.values.request import Request, ToolSpec

START = "<start_of_turn>"
END = "<end_of_turn>"
CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"


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


def _user_text(m: UserMessage) -> str:
    out = []
    for p in m.parts:
        if isinstance(p, TextPart):
            out.append(p.text)
        elif isinstance(p, ImagePart):
            out.append(f"[image {p.digest} not shown: this model takes no images]")
    return "\n".join(out)


def _call_text(c: ToolCall) -> str:
    try:
        args: Any = json.loads(c.arguments)
    except json.JSONDecodeError:
        args = c.arguments
    return f"{CALL_OPEN}{json.dumps({'name': c.name, 'arguments': args})}{CALL_CLOSE}"


def _assistant_text(m: AssistantMessage) -> str:
    return m.text + "".join(_call_text(c) for c in m.calls)


def _tool_text(m: ToolMessage) -> str:
    status = " error" if m.error else ""
    return f'<tool_result name="{m.name}" id="{m.call_id}"{status}>\n{m.text}\n</tool_result>'


def render_prompt(request: Request) -> str:
    """Gemma's turn format; the system prompt and tool list open the first turn (Gemma has no
    system role). Every message is its own turn, so appending messages extends the prompt."""
    preamble = "\n\n".join(s for s in (request.system, _tools_text(request.tools)) if s)
    parts: list[str] = []
    messages: list[Message] = list(request.messages)
    first = True
    for m in messages:
        if isinstance(m, AssistantMessage):
            role, text = "model", _assistant_text(m)
        elif isinstance(m, ToolMessage):
            role, text = "user", _tool_text(m)
        else:
            role, text = "user", _user_text(m)
        if first and preamble:
            if role == "user":
                text = f"{preamble}\n\n{text}"
            else:
                parts.append(f"{START}user\n{preamble}{END}\n")
        first = False
        parts.append(f"{START}{role}\n{text}{END}\n")
    if first and preamble:
        parts.append(f"{START}user\n{preamble}{END}\n")
    parts.append(f"{START}model\n")
    return "".join(parts)


def parse_reply(text: str, call_prefix: str) -> tuple[str, tuple[ToolCall, ...]]:
    """Split a reply into its text and the ``<tool_call>{...}</tool_call>`` calls it wrote.

    A call block that is not a JSON object naming a tool stays in the text: the model sees what it
    wrote, and nothing is lost."""
    calls: list[ToolCall] = []
    kept: list[str] = []
    rest = text
    while True:
        start = rest.find(CALL_OPEN)
        end = rest.find(CALL_CLOSE, start + len(CALL_OPEN)) if start >= 0 else -1
        if start < 0 or end < 0:
            kept.append(rest)
            break
        body = rest[start + len(CALL_OPEN) : end]
        try:
            value = json.loads(body)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            args = value.get("arguments", {})
            arguments = args if isinstance(args, str) else json.dumps(args, sort_keys=True)
            calls.append(ToolCall(id=f"{call_prefix}-{len(calls)}", name=value["name"], arguments=arguments))
            kept.append(rest[:start])
        else:
            kept.append(rest[: end + len(CALL_CLOSE)])
        rest = rest[end + len(CALL_CLOSE) :]
    return "".join(kept).strip(), tuple(calls)


def shared_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
