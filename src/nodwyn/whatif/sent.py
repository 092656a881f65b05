"""What a peer policy sends, and how a sequence of sent requests is measured.

A policy maps a conversation and a budget to the requests it would send, in order (``Sent``):
each carries its messages (after the system prompt and the catalog, which every modelled peer
keeps), the conversation messages it shows and how much of each, and which reply it asks for.
A summariser's own call is a side request: it is sent, costs and fills its cache slot, but asks for
none of the run's replies. ``measure`` turns the sequence into ``Measured`` requests: the prefix
each shares with the previous request of its cache slot, its size as the window counts it, and the
share of the conversation it shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from nodwyn.stats import common_parts
from nodwyn.values.content import Message, TextPart, ToolMessage, UserMessage
from nodwyn.whatif.measure import BYTES_PER_TOKEN, Measured, recent_shares, request_size, tokens
from nodwyn.whatif.prepared import Prepared

MAIN = "main"


@dataclass(frozen=True, slots=True, kw_only=True)
class Sent:
    """One request a policy sends before ``messages[end]`` of the conversation."""

    end: int  # the reply it asks for is messages[end]; the conversation so far is messages[:end]
    messages: tuple[Message, ...]  # what follows the system prompt and the catalog
    shown: tuple[tuple[int, float], ...]  # (conversation index, share of its content shown), in order
    side: bool = False  # a summariser's call, not a request for the run's reply
    slot: str = MAIN  # the prompt cache it is compared with (a summariser's own prompt has its own)
    output_tokens: int = 0  # tokens a side call writes (its summary)


def whole(indexes: Iterable[int]) -> tuple[tuple[int, float], ...]:
    """Each of ``indexes`` shown whole."""
    return tuple((i, 1.0) for i in indexes)


def size(p: Prepared, messages: Sequence[Message]) -> int:
    """Tokens of a request of the conversation's system prompt, catalog and ``messages``."""
    return tokens(request_size(p.system, p.tools, [p.parts.message(m) for m in messages], None))


def filler(title: str, n_tokens: int) -> UserMessage:
    """A user message of about ``n_tokens`` tokens standing for a summary a model would write: the
    title, then spaces (the policy's size is what is measured, not its words)."""
    pad = max(n_tokens * BYTES_PER_TOKEN - len(title.encode()) - 40, 0)
    return UserMessage(parts=(TextPart(text=title + " " * pad),))


def text_of(m: Message) -> str:
    if isinstance(m, ToolMessage):
        return m.text
    if isinstance(m, UserMessage):
        return "".join(x.text for x in m.parts if isinstance(x, TextPart))
    return m.text  # an assistant reply: its text (calls are structured, counted in content_size)


def measure(p: Prepared, sent: Iterable[Sent]) -> list[Measured]:
    """The requests ``sent`` as a prefix cache with one slot per ``Sent.slot`` sees them."""
    first = p.first
    content = p.content
    prev: dict[str, list[bytes]] = {}
    out: list[Measured] = []
    for s in sent:
        body = [p.parts.message(m) for m in s.messages]
        cur = [p.system, *p.tools, *body]
        before = prev.get(s.slot, [])
        cached = common_parts(before, cur)[1]
        seen = sum(share * (content[i + 1] - content[i]) for i, share in s.shown)
        shares = dict(s.shown)
        task = all(
            shares.get(i, 0.0) >= 1.0 or content[i + 1] == content[i] for i in range(min(first, s.end))
        )
        out.append(
            Measured(
                stream=sum(len(x) for x in cur),
                cached=cached,
                size=request_size(p.system, p.tools, body, None),
                visible=round(seen),
                conversation=content[s.end],
                broken=bool(before) and cached < sum(len(x) for x in before),
                recent=recent_shares(content, s.end, sorted(s.shown)),
                task_kept=task,
                side=s.side,
                output_tokens=s.output_tokens,
            )
        )
        prev[s.slot] = cur
    return out
