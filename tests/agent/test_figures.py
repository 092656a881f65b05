"""The figures ``nodwyn run`` ends with, read from a real log: the cached share over the replies
that report a cache read (the seed's token cache rate, as ``nodwyn stats`` has it)."""

from pathlib import Path
from typing import Any

from nodwyn.agent.figures import cache_figures, describe
from nodwyn.log import Store


def reply(log: Any, usage: dict[str, int], prefill_ms: float | None = None) -> None:
    req = log.append("llm.req", {"model": "m", "digest": "sha256:" + "0" * 64})
    response: dict[str, Any] = {"text": "ok", "usage": usage}
    if prefill_ms is not None:
        response["timings"] = {"prefill_ms": prefill_ms}
    log.append("llm.resp", {"req": req.seq, "response": response})


def test_figures_count_only_replies_that_report_a_cache_read(tmp_path: Path) -> None:
    with Store(tmp_path).create() as log:
        reply(log, {"prompt_tokens": 1000, "cached_tokens": 0}, prefill_ms=900.0)
        reply(log, {"prompt_tokens": 1200, "cached_tokens": 1000}, prefill_ms=150.5)
        reply(log, {"prompt_tokens": 5000})  # cache read not reported (Ollama): left out of the share
        figures = cache_figures(log.read(1))
    assert (figures.requests, figures.prompt_tokens, figures.cached_tokens) == (3, 2200, 1000)
    assert describe(figures) == "3 requests, cached 45% of prompt tokens (1,000 of 2,200), prefill 1,050 ms"


def test_figures_when_nothing_reports_a_cache_read(tmp_path: Path) -> None:
    with Store(tmp_path).create() as log:
        reply(log, {"prompt_tokens": 5000})
        figures = cache_figures(log.read(1))
    assert figures.cached_share is None
    assert describe(figures) == "1 request, cache: not reported"
