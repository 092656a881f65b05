"""How one model turn is asked, and what an ``llm.req`` recorded of it (what replay passes back to
``Window.build``)."""

from __future__ import annotations

from dataclasses import dataclass

from nodwyn.values.events import LlmReq


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnOptions:
    """How one model turn is asked: without tools (v7), with a subset (v7), past high water (v10)."""

    no_tools: bool = False
    offered_tools: tuple[str, ...] | None = None
    headroom: bool = False


def recorded_turn(req: LlmReq) -> TurnOptions:
    """The turn options an ``llm.req`` recorded: what replay passes to ``build``."""
    return TurnOptions(
        no_tools=req.no_tools is True, offered_tools=req.offered_tools, headroom=req.headroom is True
    )


def recorded_withheld(req: LlmReq) -> dict[str, str]:
    """The withheld images an ``llm.req`` recorded (digest -> reason)."""
    return {w.digest: w.reason for w in req.withheld_images or ()}
