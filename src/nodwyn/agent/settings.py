"""What the turn loop runs with and gives back: ``AgentSettings`` (one frozen value, made by
``compose.setup`` when a session is opened) and ``TurnResult``; ``cache_ask``, what a request asks
of the provider's cache."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from nodwyn.agent.sandbox import Sandbox
from nodwyn.agent.tools import Tool
from nodwyn.agent.tools.protect import NOTHING, Protected
from nodwyn.dialects import api_profile
from nodwyn.values.model import ModelEntry
from nodwyn.values.recipe import Recipe, WindowLimits

MAX_STEPS = 24


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSettings:
    """What a session's agent runs with, fixed when it is opened."""

    recipe: Recipe
    tools: Mapping[str, Tool]
    models: Mapping[str, ModelEntry]
    model: str  # the entry a new session starts on; a resumed one follows its model.switch events
    workspace: Path
    shell_timeout: float = 30.0
    tool_timeout: float = 60.0
    shell_env: Mapping[str, str] | None = None
    protected: Protected = NOTHING  # nodwyn's own files, which no file tool touches (.nodwyn always)
    sandbox: Sandbox = Sandbox()  # what shell commands may touch (agent.sandbox, ADR 0350)
    max_steps: int = MAX_STEPS  # model requests in one turn before it stops and asks
    named_files: bool = False  # a turn's message shows the files it names (agent.named, ADR 0442)
    nudges: bool = False  # a reply that ends a turn unfinished is asked once to go on (ADR 0445)
    # the window a switch to a model of another context gets (ADR 0300); None: it keeps its size
    limits_for: Callable[[ModelEntry], WindowLimits] | None = None


# Why a turn ended without a whole answer (``TurnResult.stopped``), each with the exit code
# ``nodwyn run`` ends with (docs/exit-codes.md; the error classes have 1-16).
EMPTY_REPLY = "empty reply"  # no text and no call (or only a tool response the model wrote itself)
STEP_LIMIT = "step limit"  # max_steps requests in one turn, the last still calling tools
OUTPUT_CAP = "output cap"  # the answer was cut at the request's output cap
STOPPED_EXIT = {EMPTY_REPLY: 17, STEP_LIMIT: 18, OUTPUT_CAP: 19}


@dataclass(slots=True)
class TurnResult:
    text: str
    requests: int
    stopped: str | None = None  # why the turn ended without a whole answer (a key of STOPPED_EXIT)
    why: str | None = None  # that, said for a person (the note the log holds)
    cut_at: int | None = None  # output tokens of an answer cut at the output cap


def cache_ask(settings: ModelEntry) -> str | None:
    """What the request asks of the provider's cache, for the APIs that send an ask (ADR 0112)."""
    if api_profile(settings).records_cache_ask:
        return settings.cache_control or "none"
    return None
