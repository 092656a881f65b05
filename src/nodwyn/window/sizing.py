"""Sizing the window's water marks and result cap from a model's context (recorded in the recipe).

The agent calls :func:`size_limits` once when it records a recipe; replay reads the recorded sizes
and never calls it. Rules:

* water marks left unset grow with the context: high water is three quarters of the context less
  twice the reply cap (60Ki at a 96Ki context with an 8Ki reply cap; 774,144 at a 1Mi context with an
  8Ki cap; 654,000 at a 1,000,000 one with a 64,000 cap), low water half of it (ADR 0110);
* marks set or not shrink to fit a context too small for them: high water at most the context less
  the reply cap, low water below high water;
* the result cap, unless set, grows to a 48th of high water, at most 16,384 tokens (16,128 at a
  1Mi context) and never below 3,072; a window of configured size (high water set)
  keeps 3,072;
* from window-v21 (``scaled_cap``, ADR 0390) the cap is at least a 14th of high water up to 5,120
  tokens (4,681 at a 64Ki window; 3,072 still at 16Ki and 32Ki), for a window of configured size too;
* from window-v22 (``wide_cap``, ADR 0460) at least an 8th of high water up to 5,120 instead (4,096
  at a 32Ki window, 5,120 at 64Ki, 3,072 still at 16Ki);
* the ceiling a headroom request may reach is the context less the reply cap.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodwyn.errors import ConfigError
from nodwyn.values.recipe import WindowLimits

_DEFAULT_RESULT_CAP = 3 * 1024
_MAX_RESULT_CAP = 16 * 1024
_RESULT_CAP_DIVISOR = 48
_SCALED_CAP_DIVISOR = 14  # v21: the cap is at least high water / 14 ...
_SCALED_CAP_MAX = 5 * 1024  # ... up to this (ADR 0390)
WIDE_CAP_DIVISOR = 8  # v22: at least high water / 8, up to SCALED_CAP_MAX (ADR 0460)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfiguredLimits:
    """What config.toml's ``[window]`` sets; None is unset."""

    high_water: int | None = None
    low_water: int | None = None
    max_result_tokens: int | None = None


def _grown_high_water(context_size: int, output_reserve: int) -> int:
    """High water when config.toml leaves it unset: three quarters of the context less twice the
    reply cap (the ceiling, less room for one more reply)."""
    return (context_size - 2 * output_reserve) * 3 // 4


def size_limits(
    context_size: int,
    output_reserve: int,
    configured: ConfiguredLimits = ConfiguredLimits(),
    *,
    scaled_cap: bool = False,
    wide_cap: bool = False,
) -> WindowLimits:
    """The limits for a model of ``context_size`` tokens whose reply is capped at ``output_reserve``;
    ``scaled_cap``, ``wide_cap``: the recipe's rules of those names (v21, v22), a result cap that
    grows with the budget."""
    if context_size <= 0 or output_reserve < 0:
        raise ConfigError(
            f"context size {context_size} / output reserve {output_reserve} is not usable; "
            "set the model's context_size to a positive number of tokens"
        )
    ceiling = context_size - output_reserve
    if ceiling < 1024:
        raise ConfigError(
            f"a {context_size}-token context less a {output_reserve}-token reply cap leaves {ceiling} "
            "tokens for the prompt; lower [window] output_reserve or pick a larger model"
        )
    for name in ("high_water", "low_water", "max_result_tokens"):
        value = getattr(configured, name)
        if value is not None and value <= 0:
            raise ConfigError(f"[window] {name} = {value} must be a positive number of tokens")
    fixed = configured.high_water is not None
    if configured.high_water is not None:
        high = configured.high_water
    else:
        high = max(_grown_high_water(context_size, output_reserve), ceiling // 2)
    high = min(high, ceiling)
    low = configured.low_water if configured.low_water is not None else high // 2
    if low >= high:
        low = high // 2
    if configured.max_result_tokens is not None:
        cap = configured.max_result_tokens
    elif fixed:
        cap = _DEFAULT_RESULT_CAP
    else:
        cap = min(_MAX_RESULT_CAP, max(_DEFAULT_RESULT_CAP, high // _RESULT_CAP_DIVISOR))
    if (scaled_cap or wide_cap) and configured.max_result_tokens is None:
        divisor = WIDE_CAP_DIVISOR if wide_cap else _SCALED_CAP_DIVISOR
        cap = max(cap, min(_SCALED_CAP_MAX, high // divisor))
    cap = min(cap, max(1, low // 2))
    return WindowLimits(
        high_water=high,
        low_water=low,
        max_result_tokens=cap,
        output_reserve=output_reserve,
        ceiling=ceiling,
    )
