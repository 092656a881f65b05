"""bench/replay_tail.py builds what it claims: a compacted long session whose late request replays
from its recorded start point to the bytes that were sent."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from nodwyn.log.session_log import LOG_NAME
from nodwyn.replay.exact import replay_request

BENCH = Path(__file__).resolve().parents[2] / "bench" / "replay_tail.py"


def test_bench_session_replays_from_its_start(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("replay_tail", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules["replay_tail"] = bench
    spec.loader.exec_module(bench)
    store, sid, seq, sent, start = bench.build(tmp_path, 1 << 20, seed=7)
    assert (store.sessions / sid / LOG_NAME).stat().st_size >= 1 << 20
    assert seq - start < 20 < start  # the start point is the compaction, near the end
    with store.open(sid) as log:
        assert replay_request(log, seq).canonical == sent
        assert replay_request(log, seq, whole=True).canonical == sent
