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

from collections.abc import Sequence
from dataclasses import dataclass

from nodwyn.values.canonical import canonical_bytes
from nodwyn.values.codec import message_to_json, tool_to_json
from nodwyn.values.content import Message
from nodwyn.values.request import Request, ToolSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class Chunks:
    """A request in wire order: the system prompt, each tool, each message (``label`` names one)."""

    tools: tuple[str, ...]  # the tools' names, in order
    parts: tuple[bytes, ...]

    @property
    def size(self) -> int:
        return sum(len(p) for p in self.parts)

    def label(self, i: int) -> str:
        """ "system", "tool NAME" or "message N" for ``parts[i]``."""
        if i == 0:
            return "system"
        if i <= len(self.tools):
            return f"tool {self.tools[i - 1]}"
        return f"message {i - 1 - len(self.tools)}"


class Encoder:
    """The canonical bytes of requests' parts, each distinct system prompt and message encoded once.

    One encoder shared by a pass over many requests of a session (each the one before with a few
    messages appended) encodes each message once and keeps one copy of its bytes.
    """

    def __init__(self) -> None:
        self._messages: dict[Message, bytes] = {}
        self._texts: dict[str, bytes] = {}
        self._tools: dict[bytes, bytes] = {}

    def system(self, text: str) -> bytes:
        b = self._texts.get(text)
        if b is None:
            b = self._texts[text] = canonical_bytes(text)
        return b

    def tool(self, tool: ToolSpec) -> bytes:
        b = canonical_bytes(tool_to_json(tool))  # parameters are a dict: not a key
        return self._tools.setdefault(b, b)

    def message(self, message: Message) -> bytes:
        b = self._messages.get(message)
        if b is None:
            b = self._messages[message] = canonical_bytes(message_to_json(message))
        return b

    def chunks(self, request: Request) -> Chunks:
        return Chunks(
            tools=tuple(t.name for t in request.tools),
            parts=(
                self.system(request.system),
                *(self.tool(t) for t in request.tools),
                *(self.message(m) for m in request.messages),
            ),
        )


def chunks(request: Request) -> Chunks:
    return Encoder().chunks(request)


def common_bytes(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix of two byte strings (binary search on slices, so the
    comparing is done in C)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while lo < hi:  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_parts(earlier: Sequence[bytes], later: Sequence[bytes]) -> tuple[int, int]:
    """``(n, size)``: the first ``n`` parts of both are equal, and ``size`` bytes of ``later``'s
    parts, joined, are the start of ``earlier``'s, joined.

    Each part is a whole canonical JSON value, so no part is a proper prefix of another part that
    differs from it: the common prefix ends inside the first pair of parts that differ."""
    n = size = 0
    for a, b in zip(earlier, later, strict=False):
        if a is not b and a != b:
            return n, size + common_bytes(a, b)
        n += 1
        size += len(a)
    return n, size


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
    n, size = common_parts(earlier.parts, later.parts)
    if n == len(earlier.parts):
        return Common(chunks=n, bytes=size, extends=True, first_difference=None)
    label = later.label(n) if n < len(later.parts) else earlier.label(n)
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
