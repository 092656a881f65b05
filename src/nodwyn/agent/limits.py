"""Sizing the window from ``[window]`` and the control model's context.

The sizes come from the window's own rule (``nodwyn.window.sizing.size_limits``: unset marks grow
with the context, and the recipe records what the session used). Before that, numbers the person set
are checked against the model's context here, and one that cannot work is refused with an error
that names it, the model's context and the value that would fit, rather than silently shrunk.
"""

from __future__ import annotations

from pathlib import Path

from nodwyn.agent.config import WindowConfig
from nodwyn.errors import ConfigError
from nodwyn.values.model import ModelSettings
from nodwyn.values.recipe import WindowLimits
from nodwyn.window.sizing import ConfiguredLimits, size_limits

MAX_DEFAULT_RESERVE = 8 * 1024


def default_reserve(context_size: int) -> int:
    """The reply cap when [window] leaves output_reserve unset: a 16th of the context, at most 8Ki."""
    return max(64, min(MAX_DEFAULT_RESERVE, context_size // 16))


def session_limits(window: WindowConfig, model: ModelSettings, path: Path | None = None) -> WindowLimits:
    ctx = model.context_size
    where = f"{path} [window]" if path else "[window]"
    reserve = window.output_reserve if window.output_reserve is not None else default_reserve(ctx)
    if reserve >= ctx // 2:
        raise ConfigError(
            f"{where} output_reserve = {reserve} leaves too little of model {model.name!r}'s {ctx}-token "
            f"context for a prompt; set output_reserve below {ctx // 2}"
        )
    ceiling = ctx - reserve
    high = window.high_water
    if high is not None and high > ceiling:
        raise ConfigError(
            f"{where} high_water = {high} does not fit model {model.name!r}: its context {ctx} less "
            f"output_reserve {reserve} leaves {ceiling}; set high_water to at most {ceiling} "
            "(or lower output_reserve)"
        )
    low = window.low_water
    if low is not None and low >= (high if high is not None else ceiling):
        top = high if high is not None else ceiling
        name = "high_water" if high is not None else "the ceiling"
        raise ConfigError(
            f"{where} low_water = {low} must be below {name} ({top}) for model {model.name!r}; "
            f"set low_water to at most {top - 1}"
        )
    cap = window.max_result_tokens
    if cap is not None and low is not None and cap > low // 2:
        raise ConfigError(
            f"{where} max_result_tokens = {cap} is more than half of low_water = {low}; "
            f"set max_result_tokens to at most {low // 2}"
        )
    return size_limits(
        ctx,
        reserve,
        ConfiguredLimits(high_water=high, low_water=low, max_result_tokens=cap),
    )
