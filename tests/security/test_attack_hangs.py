"""Tool calls that would never end: catastrophic patterns in fs-grep, and the
deadline every tool works under."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from nodwyn.agent.tools import Outcome, ToolContext, builtin_tools, run_call
from nodwyn.values.content import ToolCall

pytestmark = pytest.mark.attack("tool deadlines")


def call(ws: Path, name: str, *, timeout: float = 60.0, **args: object) -> tuple[Outcome, float]:
    c = ToolContext(workspace=ws, read_budget_tokens=1000, approve=lambda t, w: True, tool_timeout=timeout)
    started = time.monotonic()
    out = run_call(ToolCall(id="c", name=name, arguments=json.dumps(args)), builtin_tools(), c)
    return out, time.monotonic() - started


PATTERNS = [r"^(a+)+$", r"^(a|a)*$", r"^(a|aa)+$", r"(x+x+)+y", r"^(\w+\s?)*$", r"(.*a){20}"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_catastrophic_pattern_answers_at_once(tmp_path: Path, pattern: str) -> None:
    (tmp_path / "evil.txt").write_text(("a" * 5000 + "!\n") * 20 + "x" * 5000 + "\n")
    out, took = call(tmp_path, "fs-grep", pattern=pattern)
    assert took < 5, f"fs-grep took {took:.1f} s"
    assert "Traceback" not in out.text


def test_a_pattern_needing_backtracking_is_refused_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("abab\n")
    out, _ = call(tmp_path, "fs-grep", pattern=r"(ab)\1")
    assert out.error and "without backreferences or lookaround" in out.text


def test_a_tool_past_its_deadline_stops_with_one_line(tmp_path: Path) -> None:
    for i in range(50):
        (tmp_path / f"f{i}.txt").write_text("hay\n" * 2000)
    out, took = call(tmp_path, "fs-grep", pattern="needle", timeout=0.0)
    assert out.error and "stopped after 0 s (the tool deadline)" in out.text
    assert took < 5
    (tmp_path / "big.txt").write_text("x\n" * 3_000_000)
    out, _ = call(tmp_path, "fs-read", path="big.txt", lines="2999999-3000000", timeout=0.0)
    assert out.error and "tool deadline" in out.text
