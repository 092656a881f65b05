"""The requests the agent itself sent, as its session records them: the ``as-sent`` row.

Some sources record what each request held, not only the conversation: OpenHands' events carry its
condensations (the summary and the events it forgot), so the imported ``Run`` gives request k as a
view: conversation indexes and the messages the agent sent in their place (``nodwyn.imports.Stand``).
Sources that send the whole conversation every time (mini-swe-agent) record every request as that.
Replayed as a policy, the recorded views measure the agent as it ran, on the same scale as the
modelled policies, which is also the check of a model against its peer (ADR 0290). A summariser's
own calls are not in the sources, so they are not counted here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from nodwyn.values.content import Message
from nodwyn.whatif.measure import Measured
from nodwyn.whatif.prepared import Prepared
from nodwyn.whatif.sent import Sent, measure

View = tuple[int | Message, ...]


class Standing(Protocol):
    """A message the agent sent in place of others (``nodwyn.imports.Stand``)."""

    @property
    def message(self) -> Message: ...


class Request(Protocol):
    """What a source records of one request (``nodwyn.imports.Sent``)."""

    @property
    def view(self) -> object: ...
    @property
    def usage(self) -> object: ...


class Recorded(Protocol):
    """A conversation that records its requests (``nodwyn.imports.Run``)."""

    @property
    def replies(self) -> tuple[int, ...]: ...
    @property
    def requests(self) -> Sequence[Request]: ...
    def view(self, k: int) -> tuple[int | Standing, ...]: ...


def views(run: Recorded) -> list[View] | None:
    """Each request's messages as the source records them; None when it records no request for
    some reply, or records neither a view nor a usage for any (a source that keeps only the
    conversation, like SWE-agent's trajectories here: nothing is known of what the agent sent)."""
    if not run.requests or len(run.requests) != len(run.replies):
        return None
    if all(r.view is None and r.usage is None for r in run.requests):
        return None
    return [
        tuple(x if isinstance(x, int) else x.message for x in run.view(k)) for k in range(len(run.replies))
    ]


def requests(p: Prepared, recorded: Sequence[View]) -> list[Sent]:
    msgs = p.run.messages
    return [
        Sent(
            end=end,
            messages=tuple(msgs[x] if isinstance(x, int) else x for x in view),
            shown=tuple((x, 1.0) for x in view if isinstance(x, int)),
        )
        for end, view in zip(p.replies, recorded, strict=True)
    ]


def replay(p: Prepared, recorded: Sequence[View]) -> list[Measured]:
    return measure(p, requests(p, recorded))
