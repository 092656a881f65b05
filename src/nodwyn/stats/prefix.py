"""The prefix of a request as a cache sees it, and how much of it two requests share.

A provider caches the start of the prompt it renders: the system prompt, then the tools, then the
messages in order. The canonical JSON of a request sorts its keys (``max_output`` and ``messages``
come before ``system``), so its bytes are not in that order. We compare requests as a list of
chunks in wire order instead, each chunk the canonical bytes of one part: the system prompt, each
tool, each message. ``max_output`` is a request parameter, not part of the prompt, and is left out.

Tokens are estimated from bytes by proportion (docs/adr/0091): the shared bytes over all of the
request's bytes, times the prompt tokens the provider reported for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodwyn.values.canonical import canonical_bytes
from nodwyn.values.codec import message_to_json, tool_to_json
from nodwyn.values.request import Request


@dataclass(frozen=True, slots=True, kw_only=True)
class Chunks:
    """A request in wire order: ``labels[i]`` names ``parts[i]`` ("system", "tool NAME", "message N")."""

    labels: tuple[str, ...]
    parts: tuple[bytes, ...]

    @property
    def size(self) -> int:
        return sum(len(p) for p in self.parts)


def chunks(request: Request) -> Chunks:
    labels = ["system"]
    parts = [canonical_bytes(request.system)]
    for tool in request.tools:
        labels.append(f"tool {tool.name}")
        parts.append(canonical_bytes(tool_to_json(tool)))
    for i, message in enumerate(request.messages):
        labels.append(f"message {i}")
        parts.append(canonical_bytes(message_to_json(message)))
    return Chunks(labels=tuple(labels), parts=tuple(parts))


@dataclass(frozen=True, slots=True, kw_only=True)
class Common:
    """What ``later`` shares with ``earlier`` from the start.

    ``chunks``: whole chunks in common; ``bytes``: bytes in common (whole chunks plus the shared
    start of the first differing one); ``extends``: every chunk of ``earlier`` begins ``later``;
    ``first_difference``: the label of the first chunk that differs (None when ``extends``).
    """

    chunks: int
    bytes: int
    extends: bool
    first_difference: str | None


def common_prefix(earlier: Chunks, later: Chunks) -> Common:
    n = 0
    size = 0
    limit = min(len(earlier.parts), len(later.parts))
    while n < limit and earlier.parts[n] == later.parts[n]:
        size += len(earlier.parts[n])
        n += 1
    if n == len(earlier.parts):
        return Common(chunks=n, bytes=size, extends=True, first_difference=None)
    if n < len(later.parts):
        a, b = earlier.parts[n], later.parts[n]
        k = 0
        m = min(len(a), len(b))
        while k < m and a[k] == b[k]:
            k += 1
        size += k
        label = later.labels[n]
    else:
        label = earlier.labels[n]
    return Common(chunks=n, bytes=size, extends=False, first_difference=label)


def tokens_for(common_bytes: int, total_bytes: int, prompt_tokens: int) -> int:
    """Shared tokens estimated by proportion: common bytes / total bytes x prompt tokens."""
    if total_bytes <= 0:
        return 0
    return min(prompt_tokens, (common_bytes * prompt_tokens) // total_bytes)


def tolerance(expected: int) -> int:
    """How far below the expected cache read a reply may fall and still count as a hit.

    Caches hold whole blocks (128 tokens at OpenAI and the replicas behind OpenRouter), and the
    byte-to-token proportion is an estimate: a shortfall of a block plus 1% is not a miss.
    """
    return 128 + expected // 100
