"""The figures ``nodwyn run`` ends with, read from a real log: the cached share over the replies
that report a cache read (the token cache rate, as ``nodwyn stats`` has it)."""

from pathlib import Path
from typing import Any

from nodwyn.log import SessionLog, Store
from nodwyn.stats.figures import cache_figures, describe
from nodwyn.testing import SessionBuilder, recipe
from nodwyn.values.events import LlmResp


def reply(log: SessionLog, usage: dict[str, int], prefill_ms: float | None = None) -> None:
    """A request recorded as the agent records it (the session started on the first), and its reply."""
    s = SessionBuilder(None if log.last_seq else recipe(), log=log)
    s.user("go")
    req = s.request()
    response: dict[str, Any] = {"text": "ok", "usage": usage}
    if prefill_ms is not None:
        response["timings"] = {"prefill_ms": prefill_ms}
    s.add(LlmResp.from_data({"req": req.seq, "response": response}))


def test_figures_count_only_replies_that_report_a_cache_read(tmp_path: Path) -> None:
    with Store(tmp_path).create() as log:
        reply(log, {"prompt_tokens": 1000, "cached_tokens": 0}, prefill_ms=900.0)
        reply(log, {"prompt_tokens": 1200, "cached_tokens": 1000}, prefill_ms=150.5)
        reply(log, {"prompt_tokens": 5000})  # cache read not reported (Ollama): left out of the share
        figures = cache_figures(log.read(1))
    assert (figures.requests, figures.prompt_tokens, figures.cached_tokens) == (3, 2200, 1000)
    assert describe(figures) == (
        "3 requests, cached 45% of prompt tokens (1,000 of 2,200), prefill 1,050 ms, cost unknown"
    )


def test_figures_when_nothing_reports_a_cache_read(tmp_path: Path) -> None:
    with Store(tmp_path).create() as log:
        reply(log, {"prompt_tokens": 5000})
        figures = cache_figures(log.read(1))
    assert figures.cached_share is None
    assert describe(figures) == "1 request, cache: not reported, cost unknown"


def test_run_rounds_the_cached_share_half_up_as_stats_and_the_console_do(tmp_path: Path) -> None:
    """1 of 8 tokens is 12.5%; `nodwyn stats` and the console (Math.round) show
    13%, and so must the line `nodwyn run` ends with (Python's format rounds it to even, 12%)."""
    from click.testing import CliRunner

    from nodwyn.cli.stats import stats

    store = Store(tmp_path)
    with store.create() as log:
        reply(log, {"prompt_tokens": 8, "cached_tokens": 1})
        sid = log.id
        figures = cache_figures(log.read(1))
    out = CliRunner().invoke(stats, [sid, "--root", str(tmp_path)], catch_exceptions=False).output
    stats_line = next(line for line in out.splitlines() if "Token cache rate" in line)
    assert stats_line.split()[3] == "13%"
    assert describe(figures) == "1 request, cached 13% of prompt tokens (1 of 8), cost unknown"
    for cached, prompt in [(1, 8), (3, 8), (5, 8), (1, 200), (199, 200), (0, 5), (5, 5)]:
        js_math_round = int((cached / prompt) * 100 + 0.5)  # Math.round for a non-negative number
        assert f"cached {js_math_round}%" in describe(cache_figures_of(cached, prompt)), (
            f"{cached} of {prompt}"
        )


def cache_figures_of(cached: int, prompt: int) -> Any:
    from nodwyn.stats.figures import CacheFigures

    return CacheFigures(requests=1, prompt_tokens=prompt, cached_tokens=cached, prefill_ms=None)
