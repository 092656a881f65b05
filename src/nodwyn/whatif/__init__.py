"""What-if: a conversation replayed through nodwyn's window and through the policies of other
agents, each measured as a prefix cache and a budget see it (PURE: no disk, clock or network).

``POLICIES`` names each policy's replay, ``(Prepared, budget) -> [Measured]``; ``compare(runs,
budget, prices)`` gives each policy's ``Figures`` over a set of conversations. The peers' modules
(``sliding``, ``masking``, ``condenser``, ``prune``, ``compaction``) each map a conversation and a
budget to the requests that peer would send (``Sent``); their docstrings cite the rule they model.
See ADR 0290 and docs/bench-peers.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from nodwyn.values.model import Prices
from nodwyn.values.recipe import DEFAULT_TRIM_DEPTH, DEFAULT_VERSION, TRIM_DEPTHS
from nodwyn.whatif import compaction, condenser, engine, masking, prune, recorded, sliding
from nodwyn.whatif.measure import Figures, Measured, figures
from nodwyn.whatif.prepared import Conversation, Prepared, prepare
from nodwyn.whatif.sent import Sent, measure

Replay = Callable[[Prepared, int], list[Measured]]
Requests = Callable[[Prepared, int], list[Sent]]


def _dial(position: str | None) -> Replay:
    """nodwyn's window at one position of the default recipe's trim-depth dial (ADRs 0390, 0460;
    None: the default position)."""
    sizing = engine.Sizing(version=DEFAULT_VERSION, trim_depth=position)
    return lambda p, budget: engine.replay(p, budget, sizing).requests


def _peer(requests: Requests) -> Replay:
    return lambda p, budget: measure(p, requests(p, budget))


# name -> (replay, one line on what it models); "whole" is no window, the minimum's policy
POLICIES: dict[str, tuple[Replay, str]] = {
    "nodwyn": (_dial(None), "nodwyn's window (the default recipe)"),
    # the other positions of the default recipe's trim-depth dial, "keep more" to "pay less"
    **{
        f"nodwyn:{d}": (_dial(d), f"nodwyn's window, trim depth {d!r} (window-v{DEFAULT_VERSION}'s dial)")
        for d in TRIM_DEPTHS
        if d != DEFAULT_TRIM_DEPTH
    },
    "sliding": (_peer(sliding.requests), "drop the oldest messages to fit"),
    "swe-agent": (_peer(masking.requests), "SWE-agent: mask all but the last 5 observations"),
    "openhands": (_peer(condenser.requests), "OpenHands: summarising condenser, max_size 80, keep_first 4"),
    "opencode": (_peer(prune.requests), "opencode: prune old tool outputs, compact on overflow"),
    "claude-code": (_peer(compaction.requests), "Claude Code: compact the conversation at 95% of the window"),
    "whole": (_peer(sliding.append_requests), "every request whole (no window)"),
}


def compare(
    runs: Sequence[Conversation], budget: int, prices: Prices | None = None, policies: Sequence[str] = ()
) -> dict[str, Figures]:
    """Each policy's figures over ``runs`` at ``budget`` (tokens); costs at ``prices`` if given."""
    prepared = [prepare(r) for r in runs]
    return {
        name: figures([(POLICIES[name][0](p, budget), p.minimum) for p in prepared], budget, prices)
        for name in list(policies) or list(POLICIES)
    }


__all__ = [
    "POLICIES", "Conversation", "Figures", "Measured", "Prepared", "Sent", "compare", "figures", "measure",
    "prepare", "recorded",
]  # fmt: skip
