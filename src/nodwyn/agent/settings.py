"""What the turn loop runs with and gives back: ``AgentSettings`` (one frozen value, made by
``compose.setup`` when a session is opened) and ``TurnResult``; ``cache_ask``, what a request asks
of the provider's cache."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from nodwyn.agent.tools import Tool
from nodwyn.dialects import api_profile
from nodwyn.values.model import ModelSettings
from nodwyn.values.recipe import Recipe

MAX_STEPS = 24


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSettings:
    """What a session's agent runs with, fixed when it is opened."""

    recipe: Recipe
    tools: Mapping[str, Tool]
    models: Mapping[str, ModelSettings]
    model: str  # the entry a new session starts on; a resumed one follows its model.switch events
    workspace: Path
    shell_timeout: float = 30.0
    tool_timeout: float = 60.0
    shell_env: Mapping[str, str] | None = None
    max_steps: int = MAX_STEPS  # model requests in one turn before it stops and asks


@dataclass(slots=True)
class TurnResult:
    text: str
    requests: int
    stopped: str | None = None  # why the turn ended without a final answer


def cache_ask(settings: ModelSettings) -> str | None:
    """What the request asks of the provider's cache, for the APIs that send an ask (ADR 0112)."""
    if api_profile(settings).records_cache_ask:
        return settings.cache_control or "none"
    return None
