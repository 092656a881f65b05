"""A ``tools/call`` result as the text of a tool result, which the window caps, folds and trims
like any other.

Text parts as they are; an image (or audio) part is stored as an attachment and named by its
digest, and an image the window can size (PNG, JPEG, GIF, WebP) is also on the outcome as an
``ImageRef``, so the model sees it where it takes images (``agent.attach.tool_images``); a
resource link by its URI; an embedded resource by its text or, for bytes, its digest;
structured content as compact JSON when no text part came with it (the spec asks servers to send
its text too, which FastMCP does, wrapping a bare value as ``{"result": ...}``); ``isError`` makes
the result an error. The whole text stops at ``MAX_RESULT_BYTES`` with a line saying how much was
left out (the window's own cap is smaller still).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable

import mcp_types as types

from nodwyn.agent import Outcome, image_size
from nodwyn.errors import ConfigError
from nodwyn.values.events import ImageRef

MAX_RESULT_BYTES = 1024 * 1024
Store = Callable[[bytes], str]  # bytes -> digest (the session's attachments)


def _blob(
    kind: str, mime: str | None, data: str, store: Store | None, images: list[ImageRef] | None = None
) -> str:
    """The part's line; an image that is kept and can be sized is added to ``images`` too."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f"[{kind}: not valid base64; left out]"
    mime = mime or "application/octet-stream"
    if store is None:
        return f"[{kind} {mime}, {len(raw)} bytes; not kept]"
    try:
        digest = store(raw)
    except Exception as exc:  # a refused attachment (a held credential in it, a full disk)
        return f"[{kind} {mime}, {len(raw)} bytes; not kept: {exc}]"
    line = f"[{kind} {mime}, {len(raw)} bytes, attachment sha256:{digest}]"
    if images is not None:
        try:
            media_type, width, height = image_size(raw)
        except ConfigError:
            return f"{line[:-1]}; not an image the model can be shown (PNG, JPEG, GIF or WebP)]"
        if width > 0 and height > 0:
            images.append(ImageRef(digest=digest, media_type=media_type, width=width, height=height))
    return line


def _part(block: types.ContentBlock, store: Store | None, images: list[ImageRef]) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return _blob("image", block.mime_type, block.data, store, images)
    if isinstance(block, types.AudioContent):
        return _blob("audio", block.mime_type, block.data, store)
    if isinstance(block, types.ResourceLink):
        what = f" ({block.mime_type})" if block.mime_type else ""
        about = f": {block.description}" if block.description else ""
        return f"[resource {block.name} {block.uri}{what}{about}]"
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        if isinstance(res, types.TextResourceContents):
            return f"[resource {res.uri}]\n{res.text}"
        return f"[resource {res.uri}] " + _blob("blob", res.mime_type, res.blob, store)
    return f"[{getattr(block, 'type', type(block).__name__)} content; not shown]"


def outcome_of(result: types.CallToolResult, store: Store | None) -> Outcome:
    images: list[ImageRef] = []
    parts = [_part(b, store, images) for b in result.content]
    structured = result.structured_content
    if structured is not None and not any(isinstance(b, types.TextContent) for b in result.content):
        parts.append(json.dumps(structured, ensure_ascii=False, sort_keys=True, separators=(",", ":")))
    body = "\n".join(parts) if parts else "(no content)"
    raw = body.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_RESULT_BYTES:
        cut = raw[:MAX_RESULT_BYTES].decode("utf-8", "ignore")
        body = f"{cut}\n[the result was {len(raw)} bytes; the first {MAX_RESULT_BYTES} are kept]"
    return Outcome(text=body, error=bool(result.is_error), images=tuple(images))
