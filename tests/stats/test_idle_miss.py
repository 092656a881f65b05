"""A cache that expired while the session sat idle, end to end: an Anthropic fake whose cache
forgets an entry unused for ~1 s (``cache_ttl_seconds``), a session that pauses past that before
its second request, and ``nodwyn cache --json`` through the CLI saying a server miss after that
idle time; the same session without the pause is appended and read from the cache."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from nodwyn.cli import cli
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.log.session_log import utc_now

from .drive import Driver, reading_script, settings
from .test_diagnosis_fakes import ROOMY

TTL = 1.0
PAUSE = 1.4


class ShiftedClock:
    """The log's clock: the time now, plus whatever the test moved it on by (``skip``)."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def __call__(self) -> datetime:
        return utc_now() + self.offset

    def skip(self, seconds: float) -> None:
        self.offset += timedelta(seconds=seconds)


def two_requests(root: Path, pause: float, clock: ShiftedClock | None = None, skip: float = 0.0) -> str:
    """Two requests to an Anthropic fake asking for the ephemeral cache, ``pause`` seconds apart
    (and the log's clock moved on by ``skip`` more); the session's id."""
    store = Store(root, fsync=False, clock=clock)
    with FakeServer(
        api="anthropic", script=reading_script(2), models=("claude-fake",), cache_ttl_seconds=TTL
    ) as fake:
        model = settings(fake.url, "c", "claude-fake", api="anthropic", cache_control="ephemeral")
        d = Driver(store, ROOMY, {"c": model}, "c", cache_ask="ephemeral")
        d.user("Read the modules.")
        d.request()
        time.sleep(pause)
        if clock is not None:
            clock.skip(skip)
        d.request()
        d.log.close()
    return d.log.id


def _cache_json(root: Path, sid: str) -> list[dict[str, Any]]:
    res = CliRunner().invoke(cli, ["cache", sid, "--json", "--root", str(root)])
    assert res.exit_code == 0, res.output
    requests: list[dict[str, Any]] = orjson.loads(res.output)["requests"]
    return requests


def test_a_pause_past_the_fakes_ttl_is_a_server_miss_after_that_idle_time(tmp_path: Path) -> None:
    first, second = _cache_json(tmp_path, two_requests(tmp_path, PAUSE))
    assert first["kind"] == "first" and first["idle_seconds"] is None
    assert second["kind"] == "server miss", second["detail"]
    assert second["cached_tokens"] == 0 and second["shortfall"] == second["expected"] > 0
    assert second["idle_seconds"] >= PAUSE
    assert (second["lifetime_seconds"], second["past_lifetime"]) == (300, False)  # 5 min asked for
    assert "idle" not in second["detail"]  # under a minute: not worth saying


def test_no_pause_is_appended_and_read_from_the_cache(tmp_path: Path) -> None:
    first, second = _cache_json(tmp_path, two_requests(tmp_path, 0.0))
    assert second["kind"] == "appended", second["detail"]
    assert second["cached_tokens"] > 0 and second["shortfall"] is None
    assert 0 <= second["idle_seconds"] < TTL


def test_nodwyn_cache_words_an_idle_time_past_the_lifetime_asked_for(tmp_path: Path) -> None:
    clock = ShiftedClock()
    sid = two_requests(tmp_path, PAUSE, clock, skip=372.0)  # the log says 6 min 12 s more went by
    second = _cache_json(tmp_path, sid)[1]
    assert second["kind"] == "server miss" and second["past_lifetime"] is True
    whole = int(second["idle_seconds"])  # 372 s skipped plus the pause (and the request's own time)
    assert 373 <= whole < 400
    words = f"; after 6 min {whole - 360} s idle, past the 5-minute lifetime asked for"
    assert second["detail"].endswith(words)
    table = CliRunner().invoke(cli, ["cache", sid, "--root", str(tmp_path)])
    assert second["detail"] in table.output
