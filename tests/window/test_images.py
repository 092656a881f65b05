"""Attached images (v12): framing line + image by digest, tile estimate, withheld, trimming."""

from __future__ import annotations

from typing import Any

from nodwyn.values.canonical import canonical_bytes
from nodwyn.values.codec import part_to_json
from nodwyn.values.content import ImagePart, TextPart, ToolCall, ToolMessage, UserMessage
from nodwyn.values.events import ImageRef, ToolResult, WithheldImage
from nodwyn.values.recipe import WindowLimits
from nodwyn.window import build_window
from nodwyn.window.estimate import image_tokens, scaled_size

from .sessions import ORIGIN_A, Sim, batch, started

IMG: dict[str, Any] = {
    "digest": "sha256:" + "ab" * 32,
    "media_type": "image/png",
    "width": 1024,
    "height": 1024,
    "name": "shot.png",
}


def test_the_tile_rule_after_chat_completions_scaling() -> None:
    assert scaled_size(1024, 1024) == (768, 768)
    assert image_tokens(1024, 1024) == 85 + 170 * 4
    assert scaled_size(4096, 2048) == (1536, 768) and image_tokens(4096, 2048) == 85 + 170 * 6
    assert image_tokens(200, 100) == 85 + 170


def test_an_image_is_a_user_message_of_a_framing_line_and_the_image_by_digest() -> None:
    sim = started(12)
    sim.user("what is wrong here?", images=[IMG])
    b = sim.request()
    text, image = b.request.messages
    assert isinstance(image, UserMessage) and len(image.parts) == 2
    line, part = image.parts
    assert isinstance(line, TextPart) and "shot.png" in line.text and "not instructions" in line.text
    assert part == ImagePart(digest=IMG["digest"], media_type="image/png", width=1024, height=1024)
    assert b.seqs == (2, 2)
    assert b"ab" * 32 in b.canonical  # the hash covers the digest, never the bytes
    part_bytes = len(canonical_bytes(part_to_json(part)))
    assert b.record.estimate == -(-(len(b.canonical) - part_bytes) // 3) + image_tokens(1024, 1024)


def test_an_image_that_cannot_be_sent_is_replaced_by_a_line_and_recorded() -> None:
    sim = started(12)
    sim.user("look", images=[IMG])
    reason = "the model takes no images"
    b = sim.request(withheld={IMG["digest"]: reason, "sha256:other": "unrelated"})
    image = b.request.messages[1]
    assert isinstance(image, UserMessage) and image.parts == (
        TextPart(text=f"[attached image shot.png was not sent: {reason}]"),
    )
    assert b.record.withheld_images == (WithheldImage(digest=IMG["digest"], reason=reason),)
    again = build_window(sim.before(sim.built[-1].seq), origin=ORIGIN_A, withheld={IMG["digest"]: reason})
    assert again.digest == b.digest  # replay applies the recorded reasons without reading a file


def test_images_are_trimmed_with_their_line_oldest_attachment_first_the_text_stays() -> None:
    lim = WindowLimits(
        high_water=1600, low_water=1000, max_result_tokens=2000, output_reserve=50, ceiling=3000
    )
    sim = started(12, limits=lim)
    first = sim.user("first", images=[IMG])
    second = sim.user("second", images=[IMG | {"digest": "sha256:" + "cd" * 32}])
    for i in range(3):
        batch(sim, [(f"c{i}", "ok")])
    b = sim.request()
    trimmed = [x for x in sim.built if x.build.record.trim]
    assert trimmed and trimmed[0].build.record.elided[0] == first.seq
    req = trimmed[0].build
    assert req.request.messages[1] == UserMessage(parts=(TextPart(text=f"[elided seq={first.seq}]"),))
    first_message = req.request.messages[0]
    assert isinstance(first_message, UserMessage) and isinstance(first_message.parts[0], TextPart)
    assert "first" in first_message.parts[0].text
    assert second.seq in b.seqs


def test_before_v12_images_are_not_in_the_window() -> None:
    sim = started(10)
    sim.user("look", images=[IMG])
    b = sim.request()
    assert len(b.request.messages) == 1 and b.record.withheld_images is None


# -- a tool result's images (an MCP tool's, on its tool.result) -----------------------------------

SHOT_DIGEST = "sha256:" + "ef" * 32
SHOT: dict[str, Any] = {
    "digest": SHOT_DIGEST,
    "media_type": "image/png",
    "width": 512,
    "height": 512,
}


def _shot_batch(sim: Sim) -> tuple[int, int]:
    """A reply calling two tools; the first answers with an image. Returns the results' seqs."""
    sim.request()
    calls = (
        ToolCall(id="c1", name="mcp__x__shot", arguments="{}"),
        ToolCall(id="c2", name="shell", arguments="{}"),
    )
    sim.reply(calls=calls)
    ref = ImageRef.from_data(SHOT | {"host": "127.0.0.1"}, "test")
    shot = sim.add(ToolResult(call_id="c1", name="mcp__x__shot", text="a shot", error=False, images=(ref,)))
    other = sim.result("c2", "ok")
    return shot.seq, other.seq


def test_a_results_image_is_in_its_tool_message_counted_by_the_tile_rule_and_replays() -> None:
    sim = started(12)
    sim.user("shoot")
    _shot_batch(sim)
    b = sim.request()
    shot, other = b.request.messages[-2:]
    part = ImagePart(digest=SHOT_DIGEST, media_type="image/png", width=512, height=512)
    assert shot == ToolMessage(call_id="c1", name="mcp__x__shot", text="a shot", images=(part,))
    assert isinstance(other, ToolMessage) and other.images == ()  # results still follow their calls
    assert b"ef" * 32 in b.canonical
    part_bytes = len(canonical_bytes(part_to_json(part)))
    assert b.record.estimate == -(-(len(b.canonical) - part_bytes) // 3) + image_tokens(512, 512)
    assert sim.replayed(sim.built[-1].seq).digest == b.digest


def test_a_results_withheld_image_is_a_line_in_its_text_and_recorded() -> None:
    sim = started(12)
    sim.user("shoot")
    _shot_batch(sim)
    reason = "model m takes no images"
    b = sim.request(withheld={SHOT_DIGEST: reason})
    shot = b.request.messages[-2]
    assert isinstance(shot, ToolMessage) and shot.images == ()
    assert shot.text == f"a shot\n[image sha256:efefefefefef ({'image/png'}, 512x512) was not sent: {reason}]"
    assert b.record.withheld_images == (WithheldImage(digest=SHOT_DIGEST, reason=reason),)
    assert sim.replayed(sim.built[-1].seq).digest == b.digest


def test_a_folded_or_trimmed_result_shows_no_image() -> None:
    sim = started(12)
    sim.user("shoot")
    seq, _ = _shot_batch(sim)
    sim.fold(seq, "[folded: not needed]")
    b = sim.request()
    folded = b.request.messages[-2]
    assert isinstance(folded, ToolMessage) and folded.images == () and "folded" in folded.text
    lim = WindowLimits(
        high_water=1600, low_water=1000, max_result_tokens=2000, output_reserve=50, ceiling=3000
    )
    sim = started(12, limits=lim)
    sim.user("shoot")
    seq, _ = _shot_batch(sim)
    for i in range(6):
        batch(sim, [(f"d{i}", "ok " * 200)])
    trimmed = [x.build for x in sim.built if seq in x.build.record.elided]
    assert trimmed
    messages = trimmed[0].request.messages
    assert not any(isinstance(m, ToolMessage) and m.images for m in messages)  # gone with its batch
    assert trimmed[0].record.estimate < sim.built[-2].build.record.estimate
