"""The window's token estimate: a token per three bytes of canonical JSON, images by the tile rule.

The estimate is what hysteresis compares with the water marks. It is computed from the canonical
bytes of the request with the whole catalog (a turn offering fewer tools still counts all of them),
with each image part counted as the chat-completions tile estimate instead of its JSON bytes.
"""

from __future__ import annotations

BYTES_PER_TOKEN = 3
_IMAGE_BASE_TOKENS = 85
_IMAGE_TILE_TOKENS = 170
_TILE = 512
_FIT = 2048
_SHORT_SIDE = 768


def _tokens_of_bytes(n: int) -> int:
    """A token per three bytes, rounded up."""
    return -(-n // BYTES_PER_TOKEN)


def _scaled_size(width: int, height: int) -> tuple[int, int]:
    """Chat-completions ``detail: high`` scaling: fit within 2048x2048, then shortest side to 768."""
    w, h = max(width, 1), max(height, 1)
    if max(w, h) > _FIT:
        longest = max(w, h)
        w, h = max(1, w * _FIT // longest), max(1, h * _FIT // longest)
    if min(w, h) > _SHORT_SIDE:
        shortest = min(w, h)
        w, h = max(1, w * _SHORT_SIDE // shortest), max(1, h * _SHORT_SIDE // shortest)
    return w, h


def _image_tokens(width: int, height: int) -> int:
    """85 tokens plus 170 per 512-pixel tile, after the scaling above."""
    w, h = _scaled_size(width, height)
    tiles = (-(-w // _TILE)) * (-(-h // _TILE))
    return _IMAGE_BASE_TOKENS + _IMAGE_TILE_TOKENS * tiles


def estimate(total_bytes: int, image_bytes: int, image_toks: int) -> int:
    """Tokens of a request of ``total_bytes`` canonical bytes, ``image_bytes`` of them image parts."""
    return _tokens_of_bytes(total_bytes - image_bytes) + image_toks
