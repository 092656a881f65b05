"""Representative requests and model entries the golden files are written for."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson

from nodwyn.dialects import SseParser, StreamEvent, WireRequest
from nodwyn.dialects.sse import NdjsonParser
from nodwyn.values.content import (
    AssistantMessage,
    ImagePart,
    TextPart,
    ThinkingBlock,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from nodwyn.values.model import ModelEntry
from nodwyn.values.request import Request, ToolSpec

GOLDEN = Path(__file__).parent / "golden"
IMAGE_DIGEST = "sha256:5e1f00d5"
IMAGES = {IMAGE_DIGEST: b"PNGDATA"}  # base64: UE5HREFUQQ==
KEY = "3b0ff4a5c5f0e0d1c7a6d5b4a3928170f6e5d4c3b2a19080706050403020100f"

FS_READ = ToolSpec(
    name="fs_read",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


def user(text: str) -> UserMessage:
    return UserMessage(parts=(TextPart(text=text),))


def tools_images(thinking: str = "The user wants a.txt.", blocks: tuple[ThinkingBlock, ...] = ()) -> Request:
    """System, one tool, a user message with an image, a reply with text, thinking and a call,
    its result, and a new user message."""
    return Request(
        system="You are a careful assistant.",
        tools=(FS_READ,),
        messages=(
            UserMessage(
                parts=(
                    TextPart(text="Read a.txt and describe the picture."),
                    ImagePart(digest=IMAGE_DIGEST, media_type="image/png", width=2, height=2),
                )
            ),
            AssistantMessage(
                text="Reading it.",
                thinking=thinking,
                calls=(ToolCall(id="call_1", name="fs_read", arguments='{"path":"a.txt"}'),),
                blocks=blocks,
            ),
            ToolMessage(call_id="call_1", name="fs_read", text="hello"),
            user("Thanks."),
        ),
        max_output=1024,
    )


def entry(**kw: Any) -> ModelEntry:
    base: dict[str, Any] = {"name": "m", "model": "some-model", "context_size": 131072}
    base.update(kw)
    return ModelEntry(**base)


def wire_json(w: WireRequest) -> dict[str, Any]:
    return {"method": w.method, "path": w.path, "headers": w.headers, "body": w.body}


def check_golden(path: Path, actual: dict[str, Any]) -> None:
    """Compare with the golden file, key order included (the wire order is part of the prefix).

    UPDATE_GOLDEN=1 rewrites request goldens; read the diff before committing it.
    """
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n")
    expected = orjson.loads(path.read_bytes())
    assert (
        orjson.dumps(actual, option=orjson.OPT_INDENT_2).decode()
        == orjson.dumps(expected, option=orjson.OPT_INDENT_2).decode()
    ), f"{path.name} differs from the encoder's output"


def events(raw: bytes, *, ndjson: bool, chunk: int | None = None) -> list[StreamEvent]:
    """Frame a recorded stream, fed whole or in chunks of ``chunk`` bytes."""
    parser = NdjsonParser() if ndjson else SseParser()
    out: list[StreamEvent] = []
    step = chunk or len(raw) or 1
    for i in range(0, len(raw), step):
        out.extend(parser.feed(raw[i : i + step]))
    out.extend(parser.close())
    return out


def small(thinking: str = "t", calls: bool = True) -> Request:
    """A user message, a reply with thinking (and a call), its result."""
    call = (ToolCall(id="call_9", name="fs_read", arguments='{"path":"b"}'),) if calls else ()
    msgs: tuple[Any, ...] = (user("Hi"), AssistantMessage(text="", thinking=thinking, calls=call))
    if calls:
        msgs += (ToolMessage(call_id="call_9", name="fs_read", text="B"),)
    return Request(system="S", tools=(), messages=msgs, max_output=256)


DETAILS_1 = (
    '[{"type":"reasoning.text","text":"Need the file.","signature":"sig-abc",'
    '"format":"anthropic-claude-v1","index":0},'
    '{"type":"reasoning.encrypted","data":"gAAAAB3x_-Zz09==","format":"openai-responses-v1","index":1}]'
)
RS_1 = (
    '{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Look first."}],'
    '"encrypted_content":"gAAAAABoEnc1"}'
)
RS_2 = '{"id":"rs_2","type":"reasoning","summary":[],"encrypted_content":"gAAAAABoEnc2"}'


def two_calls(blocks: tuple[ThinkingBlock, ...], thinking: str = "") -> Request:
    """A reply with two calls and blocks among them, both results, and the next user message."""
    return Request(
        system="Be brief.",
        tools=(FS_READ,),
        messages=(
            user("Fix the bug."),
            AssistantMessage(
                text="Reading both.",
                thinking=thinking,
                calls=(
                    ToolCall(id="call_a", name="fs_read", arguments='{"path":"a.py"}'),
                    ToolCall(id="call_b", name="fs_read", arguments='{"path":"b.py"}'),
                ),
                blocks=blocks,
            ),
            ToolMessage(call_id="call_a", name="fs_read", text="A"),
            ToolMessage(call_id="call_b", name="fs_read", text="no such file", error=True),
            user("Go on."),
        ),
        max_output=4096,
    )
