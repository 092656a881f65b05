"""Water marks and result cap sized from a model's context."""

from __future__ import annotations

import pytest

from nodwyn.errors import ConfigError
from nodwyn.window import ConfiguredLimits, size_limits


def test_the_seed_defaults_at_a_96ki_context() -> None:
    lim = size_limits(98_304, 8_192)
    assert (lim.high_water, lim.low_water, lim.max_result_tokens) == (61_440, 30_720, 3_072)
    assert lim.ceiling == 90_112 and lim.output_reserve == 8_192


def test_marks_and_cap_grow_with_the_context() -> None:
    lim = size_limits(1_048_576, 32_768)
    assert lim.high_water == (1_048_576 - 2 * 32_768) * 3 // 4 and lim.low_water == lim.high_water // 2
    assert lim.max_result_tokens == lim.high_water // 48  # a 48th of high water
    big = size_limits(2_000_000, 32_768)
    assert big.max_result_tokens == 16_384  # at most 16,384


def test_the_high_water_formula_gives_the_seeds_654k_and_774k_and_16128() -> None:
    """High water 774,144 (1Mi context, 8Ki cap) or 654,000 (1,000,000, 64,000 cap), and a 16,128
    result cap at 1Mi: three quarters of the context less twice the reply cap gives all three, and
    60Ki at a 96Ki context (five eighths of the
    context, the rule before, gave 655,360 and a 13,653 cap at 1Mi)."""
    one_mi = size_limits(1_048_576, 8_192)
    assert one_mi.high_water == 774_144 and one_mi.max_result_tokens == 16_128
    assert size_limits(1_000_000, 64_000).high_water == 654_000
    assert size_limits(98_304, 8_192).high_water == 60 * 1024


def test_a_fixed_window_keeps_its_marks_and_the_3072_cap() -> None:
    lim = size_limits(1_048_576, 8_192, ConfiguredLimits(high_water=200_000, low_water=100_000))
    assert (lim.high_water, lim.low_water, lim.max_result_tokens) == (200_000, 100_000, 3_072)


def test_a_set_cap_is_kept() -> None:
    assert size_limits(1_048_576, 8_192, ConfiguredLimits(max_result_tokens=5_000)).max_result_tokens == 5_000


def test_marks_shrink_to_fit_a_small_context_less_the_reply_cap() -> None:
    lim = size_limits(32_768, 4_096, ConfiguredLimits(high_water=61_440, low_water=30_720))
    assert lim.high_water == 32_768 - 4_096 and lim.low_water < lim.high_water
    unset = size_limits(16_384, 2_048)
    assert unset.high_water <= unset.ceiling == 14_336 and unset.low_water == unset.high_water // 2


@pytest.mark.parametrize(
    ("context", "reserve", "configured"),
    [
        (0, 0, ConfiguredLimits()),
        (2_000, 1_500, ConfiguredLimits()),
        (98_304, 8_192, ConfiguredLimits(low_water=-1)),
    ],
)
def test_unusable_sizes_are_refused_with_a_fix(
    context: int, reserve: int, configured: ConfiguredLimits
) -> None:
    with pytest.raises(ConfigError):
        size_limits(context, reserve, configured)


def test_v21_scales_a_fixed_windows_cap_with_its_budget() -> None:
    """ADR 0390: from v21 the cap is at least high water / 14, up to 5,120 (4,681 at 64Ki), and 3,072
    still at 16Ki and 32Ki; a set cap is kept."""
    reply = 4096
    for budget, cap in ((16 * 1024, 3_072), (32 * 1024, 3_072), (64 * 1024, 4_681), (256 * 1024, 5_120)):
        fixed = ConfiguredLimits(high_water=budget, low_water=budget // 2)
        assert size_limits(budget + reply, reply, fixed, scaled_cap=True).max_result_tokens == cap
        assert size_limits(budget + reply, reply, fixed).max_result_tokens == 3_072
    assert size_limits(98_304, 8_192, scaled_cap=True).max_result_tokens == 61_440 // 14
    assert size_limits(1_048_576, 8_192, scaled_cap=True).max_result_tokens == 16_128  # a 48th is more
    assert (
        size_limits(
            1_048_576, 8_192, ConfiguredLimits(max_result_tokens=2_000), scaled_cap=True
        ).max_result_tokens
        == 2_000
    )


def test_v22_widens_a_windows_cap_to_an_eighth_of_its_budget() -> None:
    """ADR 0460: from v22 the cap is at least high water / 8 up to 5,120 (4,096 at 32Ki, 5,120 at
    64Ki), 3,072 still at 16Ki; a set cap is kept; v21's rule is unchanged beside it."""
    reply = 4096
    for budget, cap in ((16 * 1024, 3_072), (32 * 1024, 4_096), (64 * 1024, 5_120), (256 * 1024, 5_120)):
        fixed = ConfiguredLimits(high_water=budget, low_water=budget // 2)
        assert size_limits(budget + reply, reply, fixed, wide_cap=True).max_result_tokens == cap
        assert (
            size_limits(budget + reply, reply, fixed, scaled_cap=True, wide_cap=True).max_result_tokens == cap
        )
    assert (
        size_limits(36_864, 4_096, ConfiguredLimits(high_water=32_768), scaled_cap=True).max_result_tokens
        == 3_072
    )
    assert size_limits(1_048_576, 8_192, wide_cap=True).max_result_tokens == 16_128  # a 48th is more
    kept = ConfiguredLimits(max_result_tokens=2_000)
    assert size_limits(1_048_576, 8_192, kept, wide_cap=True).max_result_tokens == 2_000
