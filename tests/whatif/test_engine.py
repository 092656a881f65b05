"""The benchmark's engine replay: runs fed to nodwyn's window as events, measured as requests.

Checked on constructed conversations and on one real run of each format: every request that is
not a recorded trim point extends its predecessor (the whole previous request is its prefix),
requests stay within the budget, and the visible share is counted from the request itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodwyn.imports import find, load
from nodwyn.imports.run import Run, user
from nodwyn.values.content import AssistantMessage, Message, ToolCall, ToolMessage
from nodwyn.whatif.engine import Sizing, replay
from nodwyn.whatif.measure import figures
from nodwyn.whatif.prepared import prepare
from nodwyn.whatif.sliding import replay as sliding


def size_of(q: Path) -> int:
    return sum(f.stat().st_size for f in q.rglob("*")) if q.is_dir() else q.stat().st_size


def conversation(sizes: list[int]) -> Run:
    msgs: list[Message] = [user("fix the bug")]
    for k, n in enumerate(sizes):
        call = ToolCall(id=f"c{k}", name="bash", arguments=f'{{"command": "step {k}"}}')
        msgs.append(AssistantMessage(text=f"step {k}: " + "why " * 20, calls=(call,)))
        msgs.append(ToolMessage(call_id=call.id, name="bash", text=(f"line {k}\n" * (n // 7 + 1))[:n]))
    msgs.append(AssistantMessage(text="done"))
    return Run(name="constructed", format="test", system="you are a test", tools=(), messages=tuple(msgs))


def test_requests_extend_their_predecessor_except_at_trim_points() -> None:
    run = conversation([2500] * 60)  # about 50k tokens of results against a 16 Ki budget
    p = prepare(run)
    res = replay(p, 16 * 1024)
    assert len(res.requests) == len(run.replies)
    assert res.trims > 0, "the conversation outgrows the budget, so the window trims"
    breaks = sum(
        1 for prev, cur in zip(res.requests, res.requests[1:], strict=False) if cur.cached < prev.stream
    )
    assert breaks <= res.trims  # a prefix moves only at a recorded trim point
    f = figures([(res.requests, p.minimum)], 16 * 1024)
    assert f.over_budget == 0
    assert f.full_prefills <= res.trims
    assert 0 < f.visible < 1
    base = figures([(sliding(p, 16 * 1024), p.minimum)], 16 * 1024)
    assert f.uncached_ratio < base.uncached_ratio
    assert f.cached_share > base.cached_share


def test_a_capped_result_counts_as_partly_visible() -> None:
    run = conversation([500, 30_000, 500, 500])  # the 30,000-byte result is over the 3,072-token cap
    p = prepare(run)
    res = replay(p, 16 * 1024)
    before, after = res.requests[1], res.requests[2]
    assert before.shortened == 0
    assert 0 < after.shortened < 30_000
    assert after.visible + after.shortened == after.conversation  # nothing elided yet
    assert figures([(res.requests, p.minimum)], 16 * 1024).hidden_by_caps > 0


def test_below_the_budget_the_engine_is_append_only() -> None:
    run = conversation([300] * 10)
    p = prepare(run)
    res = replay(p, 64 * 1024)
    assert res.trims == 0
    for prev, cur in zip(res.requests, res.requests[1:], strict=False):
        assert cur.cached == prev.stream
    f = figures([(res.requests, p.minimum)], 64 * 1024)
    assert f.visible == 1.0 and f.full_prefills == 0
    # what the engine adds to the run's own bytes is the task header and the output cap
    assert 1.0 <= f.uncached_ratio < 1.05


@pytest.mark.parametrize(
    "pattern",
    [
        "minisweagent-gemini3pro/*.traj.json",
        "minisweagent-deepseek-v2/*/*.traj.json",
        "openhands-v1-claude-sonnet4/*/",
    ],
)
def test_a_real_run_of_each_format_replays(workloads: Path, pattern: str) -> None:
    path = min(workloads.glob(pattern), key=size_of)
    [found] = find(path)
    p = prepare(load(found))
    res = replay(p, 32 * 1024, Sizing())
    assert len(res.requests) == len(p.replies)
    breaks = sum(1 for a, b in zip(res.requests, res.requests[1:], strict=False) if b.cached < a.stream)
    assert breaks <= res.trims
    assert all(r.visible <= r.conversation for r in res.requests)
