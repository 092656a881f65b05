"""The benchmark command: a table per budget for both policies, the 32 Ki target line, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import window_workloads
from nodwyn.whatif.engine import Sizing
from nodwyn.window.units import _V20


def smallest_run(workloads: Path) -> Path:
    return min((workloads / "minisweagent-gemini3pro").glob("*.traj.json"), key=lambda p: p.stat().st_size)


def test_one_run_prints_both_policies_at_each_budget(
    workloads: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = window_workloads.main([str(smallest_run(workloads)), "--budgets", "16,32", "--jobs", "1"])
    out = capsys.readouterr().out
    assert code == 0
    for row in ("v19 @ 16 Ki", "sliding @ 16 Ki", "whole @ 16 Ki", "v19 @ 32 Ki", "sliding @ 32 Ki"):
        assert row in out
    for peer in ("swe-agent", "openhands", "opencode", "claude-code"):  # every peer policy of nodwyn.whatif
        assert f"{peer} @ 16 Ki" in out and f"{peer} @ 32 Ki" in out
    # the earlier defaults, the default (v22) and its dial's other positions
    for recipe in ("v20", "v21", "v22", "v22:keep-more", "v22:pay-less"):
        assert f"{recipe} @ 16 Ki" in out and f"{recipe} @ 32 Ki" in out
    assert "r8Ki" in out and "r16Ki" in out and "task" in out
    assert "targets at 32 Ki" in out and "trim points" in out
    assert "v20 against v19 at 32 Ki: " in out
    assert "v22 against v19 and v20 at 16 Ki: " in out and "v22 against v19 and v20 at 32 Ki: " in out
    assert "v22:pay-less (the dial's cheap end) at 32 Ki: " in out
    assert "v22 @ 32 Ki: cost " in out and "v22 - v20: cost " in out  # the bootstrap


def test_each_rule_of_v20_alone_is_a_recipe_to_ask_for(
    workloads: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [str(smallest_run(workloads)), "--budgets", "32", "--jobs", "1", "--no-baselines"]
    code = window_workloads.main([*args, "--recipes", "v19,v19+units,v19+growth,v19+head"])
    out = capsys.readouterr().out
    assert code == 0
    for recipe in ("v19+units", "v19+growth", "v19+head"):
        assert f"{recipe} @ 32 Ki" in out


def test_the_baseline_alone_needs_no_engine(workloads: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = window_workloads.main([str(smallest_run(workloads)), "--budgets", "64", "--baseline-only"])
    out = capsys.readouterr().out
    assert code == 0 and "sliding @ 64 Ki" in out and "v19 @" not in out and "v20 @" not in out
    assert "claude-code @ 64 Ki" in out and "openhands @ 64 Ki" in out


def test_scale_times_n_2n_4n_runs_of_one_mix(workloads: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = str(workloads / "minisweagent-gemini3pro")
    code = window_workloads.main([runs, "--every", "8", "--limit", "4", "--scale"])
    out = capsys.readouterr().out
    assert code == 0 and "import: 4 runs in" in out
    runs_line = next(line for line in out.splitlines() if line.startswith("  runs   "))
    assert runs_line.split()[1:6:2] == ["1", "2", "4"]  # every 4th, every 2nd, every run
    assert "time ratio" in out and "time per run" in out and "runs/s" in out and "v20 @" not in out


def test_a_missing_folder_is_an_error_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = window_workloads.main([str(tmp_path / "nowhere")])
    assert code == 2
    assert "nowhere: no such file or folder" in capsys.readouterr().err


def test_bad_budgets_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        window_workloads.main([str(tmp_path), "--budgets", "16,lots"])
    assert exited.value.code == 2
    assert "--budgets '16,lots': give whole numbers of Ki tokens" in capsys.readouterr().err


def test_low_water_above_the_fixed_prefix() -> None:
    plain = Sizing().limits(32 * 1024, fixed=12_000)
    above = Sizing(above_prefix=True).limits(32 * 1024, fixed=12_000)
    assert plain.low_water == 16 * 1024
    assert above.low_water == 12_000 + (32 * 1024 - 12_000) // 2
    assert above.high_water == plain.high_water == above.ceiling == 32 * 1024
    assert above.max_result_tokens == plain.max_result_tokens == 4096  # the default (v22) cap at 32 Ki
    assert Sizing(version=21).limits(32 * 1024).max_result_tokens == 3072


def test_tuning_and_recipes_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        window_workloads.main([str(tmp_path), "--recipes", "v19,v99"])
    assert "'v99' is not one of v19, v20" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        window_workloads.main([str(tmp_path), "--tune", "depth=3"])
    assert "'depth' is not a v20 constant" in capsys.readouterr().err
    t = window_workloads.parse_tuning("growth=0.02,reserve=8192")
    assert t.growth == 0.02 and t.reserve == 8192 and t.head == _V20.head
