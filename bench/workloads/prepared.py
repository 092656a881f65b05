"""A run's parts measured once, shared by every policy replayed over it."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate

from bench.workloads.measure import content_size

from nodwyn.imports.run import Run
from nodwyn.stats.prefix import Encoder


@dataclass(frozen=True, slots=True, kw_only=True)
class Prepared:
    run: Run
    parts: Encoder  # the run's messages encoded once, shared by every request built from them
    system: bytes
    tools: tuple[bytes, ...]
    messages: tuple[bytes, ...]  # canonical bytes of each message of the run
    content: tuple[int, ...]  # prefix sums of content bytes: content[i] = bytes of messages[:i]
    replies: tuple[int, ...]

    @property
    def minimum(self) -> int:
        """What sending everything append-only costs uncached: the bytes of the last request's
        parts, which is the sum of what each request appended to the one before."""
        last = self.replies[-1] if self.replies else 0
        return len(self.system) + sum(len(t) for t in self.tools) + sum(len(m) for m in self.messages[:last])


def prepare(run: Run, parts: Encoder | None = None) -> Prepared:
    parts = parts or Encoder()
    return Prepared(
        run=run,
        parts=parts,
        system=parts.system(run.system),
        tools=tuple(parts.tool(t) for t in run.tools),
        messages=tuple(parts.message(m) for m in run.messages),
        content=(0, *accumulate(content_size(m) for m in run.messages)),
        replies=run.replies,
    )
