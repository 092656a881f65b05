"""Attaching an image: its bytes go to the session's attachment store, the log gets its digest,
type, size and the host the person confirmed sending it to. Before each request, ``withheld``
decides per image: its bytes go to the model, or it is withheld with the reason."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

from nodwyn.agent.tools import Outcome
from nodwyn.dialects import api_profile
from nodwyn.errors import ConfigError, CorruptLogError, NotFoundError
from nodwyn.log import Attachments
from nodwyn.values.events import ImageRef
from nodwyn.values.model import ModelEntry

MAX_IMAGE_BYTES = 20 * 1024 * 1024


def image_size(data: bytes) -> tuple[str, int, int]:
    """(media type, width, height) of a PNG, JPEG, GIF or WebP, read from its header."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        w, h = struct.unpack(">II", data[16:24])
        return "image/png", w, h
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        w, h = struct.unpack("<HH", data[6:10])
        return "image/gif", w, h
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        chunk = data[12:16]
        if chunk == b"VP8X":
            w = 1 + int.from_bytes(data[24:27], "little")
            h = 1 + int.from_bytes(data[27:30], "little")
            return "image/webp", w, h
        if chunk == b"VP8 ":
            w, h = struct.unpack("<HH", data[26:30])
            return "image/webp", w & 0x3FFF, h & 0x3FFF
        if chunk == b"VP8L":
            bits = int.from_bytes(data[21:25], "little")
            return "image/webp", (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                i += 1
                continue
            marker = data[i + 1]
            if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
                h, w = struct.unpack(">HH", data[i + 5 : i + 9])
                return "image/jpeg", w, h
            length = struct.unpack(">H", data[i + 2 : i + 4])[0]
            i += 2 + length
    raise ConfigError("not a PNG, JPEG, GIF or WebP image (could not read its size)")


def read_image(path: Path) -> tuple[bytes, str, int, int]:
    """The bytes, media type and size of an image file, or one error naming the file."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise NotFoundError(f"--image {path}: no such file") from None
    if size > MAX_IMAGE_BYTES:
        raise ConfigError(f"--image {path}: {size} bytes is more than {MAX_IMAGE_BYTES}; resize it first")
    data = path.read_bytes()
    try:
        media_type, width, height = image_size(data)
    except ConfigError as exc:
        raise ConfigError(f"--image {path}: {exc}") from None
    return data, media_type, width, height


def image_ref(attachments: Attachments, path: Path, host: str) -> ImageRef:
    """The image at ``path``, put in ``attachments``, confirmed for ``host``."""
    data, media_type, width, height = read_image(path)
    digest = attachments.put(data)
    return ImageRef(
        digest=digest, media_type=media_type, width=width, height=height, name=path.name, host=host
    )


def model_host(settings: ModelEntry) -> str:
    """The host an attachment confirmed for this model goes to ("local" for the in-process model)."""
    if api_profile(settings).in_process:
        return "local"
    if settings.server:
        return settings.server
    return (urlsplit(settings.base_url or "").hostname or "").lower()


def withheld(
    refs: Mapping[str, ImageRef], settings: ModelEntry, attachments: Attachments
) -> tuple[dict[str, str], dict[str, bytes]]:
    """Each attached image (``refs`` by digest): withheld with the reason, or its bytes to send."""
    reasons: dict[str, str] = {}
    images: dict[str, bytes] = {}
    host = model_host(settings)
    for digest, ref in refs.items():
        if not settings.takes_images:
            reasons[digest] = f"model {settings.name} takes no images"
            continue
        if ref.host is not None and ref.host != host:
            reasons[digest] = f"the image was confirmed for {ref.host}, not {host}"
            continue
        try:
            images[digest] = attachments.get(digest)  # checks the digest again
        except NotFoundError:
            reasons[digest] = "the image is missing from the session's attachment store"
        except (CorruptLogError, OSError):
            reasons[digest] = "the stored image no longer matches its digest"
    return reasons, images


def tool_images(outcome: Outcome, settings: ModelEntry) -> Outcome:
    """A tool's outcome as logged: the images it returned confirmed for the model's host, as an
    ``--image`` is; where the model takes no images (its entry's ``takes_images``), none is kept on
    the result and its text says so."""
    if not outcome.images:
        return outcome
    if not settings.takes_images:
        n = len(outcome.images)
        line = f"[{n} image{'s' if n > 1 else ''} not sent: model {settings.name} takes no images]"
        return replace(outcome, text=f"{outcome.text}\n{line}", images=())
    host = model_host(settings)
    return replace(outcome, images=tuple(replace(ref, host=host) for ref in outcome.images))
