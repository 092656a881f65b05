"""The fakes' own diagnosis of a request's cache reuse (ADR 0312), from their own cache state.

Anthropic answers ``diagnostics.previous_message_id`` and OpenAI Responses answers
``prompt_cache_options.comparison_response_id`` by comparing the request with the one that earlier
reply answered. A fake keeps, per reply id, what it was asked (``Seen``: the prompt's sections in
prefix order and the tokens a later request could have reused) and compares section by section:
the first section that is not the same (the conversation's may grow: a request that appends
messages extends it) names the reason; ``missed`` is the reusable tokens past the first byte that
differs. A request that extends the earlier one but read less than it could have reused (the entry
expired, another replica served it) is ``unavailable``: the fake's cache no longer held it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from nodwyn.fakes.base import State
from nodwyn.fakes.cache import common_prefix, prefix_tokens

_SEEN = "diagnosis.seen"
# sections that key the cache rather than start the prompt: a change misses all of it
KEYED = frozenset({"model_changed", "prompt_cache_key_changed", "reasoning_effort_changed"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Seen:
    """One request as a later diagnosis compares it: (reason if it differs, section bytes) in
    prefix order, the last of which may grow; and what a later request could reuse of it."""

    sections: tuple[tuple[str, bytes], ...]
    reusable: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    reason: str | None  # None: no divergence (a hit); "not found": no such earlier reply
    missed: int = 0


def remember(state: State, reply_id: str, seen: Seen) -> None:
    state.extra.setdefault(_SEEN, {})[reply_id] = seen


def compare(state: State, earlier_id: str, now: Seen, read: int) -> Verdict:
    """The diagnosis of ``now`` (which read ``read`` tokens) against the reply ``earlier_id``."""
    known: Mapping[str, Seen] = state.extra.get(_SEEN, {})
    before = known.get(earlier_id)
    if before is None:
        return Verdict(reason="not found")
    offset = 0
    last = len(before.sections) - 1
    for i, ((reason, was), (_, is_now)) in enumerate(zip(before.sections, now.sections, strict=True)):
        if was == is_now or (i == last and is_now.startswith(was)):  # the last section may grow
            offset += len(was) if reason not in KEYED else 0
            continue
        shared = 0 if reason in KEYED else prefix_tokens(offset + common_prefix(was, is_now))
        return Verdict(reason=reason, missed=max(before.reusable - shared, 0))
    if read < before.reusable:
        return Verdict(reason="unavailable", missed=before.reusable - read)
    return Verdict(reason=None)
