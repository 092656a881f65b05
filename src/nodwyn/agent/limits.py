"""Sizing the window from ``[window]`` and the control model's context.

Unset numbers are sized from the context (the seed's 60Ki/30Ki/3Ki grow with a large context and
shrink to fit a small one, less the reply cap); numbers the person set are checked, and one that
cannot work is refused with an error naming it, the model's context and the largest value that fits.
"""

from __future__ import annotations

from pathlib import Path

from nodwyn.agent.config import WindowConfig
from nodwyn.errors import ConfigError
from nodwyn.values.model import ModelSettings
from nodwyn.values.recipe import WindowLimits

_KI = 1024
DEFAULT_HIGH = 60 * _KI
DEFAULT_LOW = 30 * _KI
DEFAULT_CAP = 3 * _KI
MAX_GROWN_CAP = 16 * _KI


def size_limits(window: WindowConfig, model: ModelSettings, path: Path | None = None) -> WindowLimits:
    ctx = model.context_size
    where = f"{path} [window]" if path else "[window]"
    reserve = window.output_reserve
    if reserve is None:
        reserve = max(64, min(8 * _KI, ctx // 16))
    elif reserve >= ctx // 2:
        raise ConfigError(
            f"{where} output_reserve = {reserve} leaves no room for a prompt in model {model.name!r}'s "
            f"{ctx}-token context; set output_reserve below {ctx // 2}"
        )
    ceiling = ctx - reserve
    high = window.high_water
    grown = False
    if high is None:
        high = min(DEFAULT_HIGH, ceiling * 3 // 4) if ceiling < 2 * DEFAULT_HIGH else ceiling * 3 // 4
        grown = high > DEFAULT_HIGH
    elif high > ceiling:
        raise ConfigError(
            f"{where} high_water = {high} does not fit model {model.name!r}: its context {ctx} less "
            f"output_reserve {reserve} leaves {ceiling}; set high_water to at most {ceiling} "
            f"(or lower output_reserve)"
        )
    low = window.low_water
    if low is None:
        low = min(DEFAULT_LOW, high // 2) if not grown else high // 2
    elif low >= high:
        raise ConfigError(
            f"{where} low_water = {low} must be below high_water = {high}; "
            f"set low_water to at most {high - 1}"
        )
    cap = window.max_result_tokens
    if cap is None:
        cap = min(MAX_GROWN_CAP, high // 48) if grown else min(DEFAULT_CAP, max(64, high // 4))
    elif cap > high // 2:
        raise ConfigError(
            f"{where} max_result_tokens = {cap} is more than half of high_water = {high}; "
            f"set max_result_tokens to at most {high // 2}"
        )
    return WindowLimits(
        high_water=high, low_water=low, max_result_tokens=cap, output_reserve=reserve, ceiling=ceiling
    )
