"""How one model turn is asked, and what an ``llm.req`` recorded of it (what replay passes back to
``Window.build``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnOptions:
    """How one model turn is asked: without tools (v7), with a subset (v7), past high water (v10)."""

    no_tools: bool = False
    offered_tools: tuple[str, ...] | None = None
    headroom: bool = False


def recorded_turn(data: Mapping[str, Any]) -> TurnOptions:
    """The turn options an ``llm.req`` payload recorded: what replay passes to ``build``."""
    offered = data.get("offered_tools")
    return TurnOptions(
        no_tools=data.get("no_tools") is True,
        offered_tools=tuple(str(t) for t in offered) if isinstance(offered, list) else None,
        headroom=data.get("headroom") is True,
    )


def recorded_withheld(data: Mapping[str, Any]) -> dict[str, str]:
    """The withheld images an ``llm.req`` payload recorded (digest -> reason)."""
    held = data.get("withheld_images", [])
    if not isinstance(held, list):
        return {}
    return {
        w["digest"]: w["reason"]
        for w in held
        if isinstance(w, dict) and isinstance(w.get("digest"), str) and isinstance(w.get("reason"), str)
    }
