"""Properties every dialect keeps: encoding is deterministic, and a request that extends another
by appended messages encodes to a wire list that extends the other's (cache safety)."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from nodwyn.dialects import dialect_for
from nodwyn.values.content import (
    AssistantMessage,
    BlockType,
    Message,
    Origin,
    TextPart,
    ThinkingBlock,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from nodwyn.values.model import ModelEntry
from nodwyn.values.request import Request

from .cases import FS_READ, KEY, entry

ENTRIES: list[ModelEntry] = [
    entry(api="ollama", model="qwen3:8b", keep_alive="10m"),
    entry(api="openai-chat", family="compatible"),
    entry(api="openai-chat", family="cerebras", cache_key="header"),
    entry(api="openai-chat", family="deepseek"),
    entry(api="openai-chat", family="openrouter", cache_control="ephemeral"),
    entry(api="openai-chat", family="openrouter", reasoning_details_only=True),
    entry(api="responses", keep_reasoning=True, reasoning_effort="high"),
    entry(api="anthropic", cache_control="1h"),
]
BLOCK_TYPES: dict[str, tuple[BlockType, ...]] = {
    "ollama": (),
    "openai-chat": ("reasoning_details",),
    "responses": ("reasoning",),
    "anthropic": ("thinking", "redacted_thinking"),
}
WIRE_LIST = {"ollama": "messages", "openai-chat": "messages", "responses": "input", "anthropic": "messages"}

text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), min_size=1, max_size=12)


def _block(kind: BlockType, origin: Origin, n: int, pos: int) -> ThinkingBlock:
    if kind == "reasoning_details":
        data = f'[{{"type":"reasoning.encrypted","data":"enc{n}","index":0}}]'
    elif kind == "reasoning":
        data = f'{{"id":"rs_{n}","type":"reasoning","summary":[],"encrypted_content":"e{n}"}}'
    else:
        data = f"sig{n}"
    return ThinkingBlock(type=kind, origin=origin, data=data, text=f"t{n}", position=pos)


@st.composite
def conversations(draw: st.DrawFn, s: ModelEntry) -> list[Message]:
    """User turns, each followed by replies whose calls all get results (as the window sends)."""
    msgs: list[Message] = []
    n = 0
    for _ in range(draw(st.integers(1, 4))):
        msgs.append(UserMessage(parts=(TextPart(text=draw(text)),)))
        for _ in range(draw(st.integers(0, 3))):
            ncalls = draw(st.integers(0, 2))
            calls = tuple(
                ToolCall(
                    id=f"c{n}_{i}", name="fs_read", arguments=orjson.dumps({"path": draw(text)}).decode()
                )
                for i in range(ncalls)
            )
            kinds = BLOCK_TYPES[s.api]
            blocks: tuple[ThinkingBlock, ...] = ()
            if len(kinds) > 0 and draw(st.booleans()):
                if s.api == "openai-chat":
                    blocks = (_block("reasoning_details", s.origin, n, 0),)
                else:
                    blocks = tuple(
                        _block(
                            draw(st.sampled_from(kinds)), s.origin, n * 10 + j, draw(st.integers(0, ncalls))
                        )
                        for j in range(draw(st.integers(1, 2)))
                    )
            reply_text = draw(st.sampled_from(["", "ok", "done"]))
            if not (reply_text or calls or blocks):
                reply_text = "ok"
            msgs.append(
                AssistantMessage(
                    text=reply_text, thinking=draw(st.sampled_from(["", "hm"])), calls=calls, blocks=blocks
                )
            )
            msgs.extend(
                ToolMessage(call_id=c.id, name=c.name, text=draw(text), error=draw(st.booleans()))
                for c in calls
            )
            n += 1
            if not calls:
                break
    return msgs


def _encode(s: ModelEntry, msgs: list[Message]) -> Any:
    req = Request(system="sys", tools=(FS_READ,), messages=tuple(msgs), max_output=512)
    return dialect_for(s).encode(req, session_key=KEY)


@st.composite
def entry_and_conversation(draw: st.DrawFn) -> tuple[ModelEntry, list[Message]]:
    s = draw(st.sampled_from(ENTRIES))
    return s, draw(conversations(s))


@settings(max_examples=150, deadline=None)
@given(entry_and_conversation())
def test_encoding_is_deterministic(case: tuple[ModelEntry, list[Message]]) -> None:
    s, msgs = case
    a, b = _encode(s, msgs), _encode(s, msgs)
    assert a.body_bytes() == b.body_bytes()
    assert a.headers == b.headers


@settings(max_examples=150, deadline=None)
@given(entry_and_conversation(), st.data())
def test_appended_messages_extend_the_wire_list(
    case: tuple[ModelEntry, list[Message]], data: st.DataObject
) -> None:
    s, msgs = case
    # a request is sent when every call has its result: cut where the next message is not a result
    cuts = [k for k in range(1, len(msgs) + 1) if k == len(msgs) or not isinstance(msgs[k], ToolMessage)]
    k = data.draw(st.sampled_from(cuts))
    key = WIRE_LIST[s.api]
    short = _encode(s, msgs[:k]).body[key]
    long = _encode(s, msgs).body[key]
    assert long[: len(short)] == short
    assert orjson.dumps(long).startswith(orjson.dumps(short)[:-1])
