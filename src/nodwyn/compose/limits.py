"""Sizing the window from ``[window]`` and the control model's context.

The sizes come from the window's own rule (``nodwyn.window.sizing.size_limits``: unset marks grow
with the context, marks set or not shrink to fit a context too small for them, less the reply cap,
and the recipe records what the session used). What cannot work whatever the model (a low water
at or above the high water set beside it, a result cap over half the low water set, a reply cap
that leaves no room for a prompt) is refused with an error that names it and the value that fits.
"""

from __future__ import annotations

from pathlib import Path

from nodwyn.compose.config import WindowConfig
from nodwyn.errors import ConfigError
from nodwyn.values.model import ModelSettings
from nodwyn.values.recipe import WindowLimits
from nodwyn.window.sizing import ConfiguredLimits, size_limits

MAX_DEFAULT_RESERVE = 8 * 1024
MIN_CONTEXT = 2048  # the window needs room for a prompt of 1024 tokens and a reply besides


def default_reserve(context_size: int) -> int:
    """The reply cap when [window] leaves output_reserve unset: a 12th of the context, at most 8Ki
    (8Ki at a 96Ki context)."""
    return max(64, min(MAX_DEFAULT_RESERVE, context_size // 12))


def session_limits(
    window: WindowConfig,
    model: ModelSettings,
    path: Path | None = None,
    *,
    scaled_cap: bool = False,
    wide_cap: bool = False,
) -> WindowLimits:
    """``scaled_cap``, ``wide_cap``: the recipe's rules of those names (window-v21 and v22, ADRs
    0390 and 0460)."""
    ctx = model.context_size
    where = f"{path} [window]" if path else "[window]"
    if ctx < MIN_CONTEXT:  # before any advice is worked out from it (none could be positive)
        entry = f"{path} [models.{model.name}]" if path else f"[models.{model.name}]"
        raise ConfigError(
            f"{entry} context_size = {ctx} is too small: a session needs at least {MIN_CONTEXT} tokens "
            "(a prompt and a reply); give the model's real context size"
        )
    reserve = window.output_reserve if window.output_reserve is not None else default_reserve(ctx)
    if reserve >= ctx // 2:
        raise ConfigError(
            f"{where} output_reserve = {reserve} leaves too little of model {model.name!r}'s {ctx}-token "
            f"context for a prompt; set output_reserve below {ctx // 2}"
        )
    high = window.high_water
    low = window.low_water
    if low is not None and high is not None and low >= high:
        raise ConfigError(
            f"{where} low_water = {low} must be below high_water ({high}); "
            f"set low_water to at most {high - 1}"
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
        scaled_cap=scaled_cap,
        wide_cap=wide_cap,
    )


def shrunk(window: WindowConfig, limits: WindowLimits) -> list[str]:
    """What of ``[window]`` was shrunk to fit the model's context, said once when a session opens."""
    out = []
    for name in ("high_water", "low_water", "max_result_tokens"):
        set_to = getattr(window, name)
        used = getattr(limits, name)
        if set_to is not None and used < set_to:
            out.append(
                f"[window] {name} = {set_to} does not fit the model's context; the session uses {used}"
            )
    return out
