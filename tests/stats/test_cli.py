"""``nodwyn stats`` and ``nodwyn cache`` on a session driven against a fake provider."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from nodwyn.cli import cli
from nodwyn.errors import NotFoundError
from nodwyn.fakes import FakeServer
from nodwyn.log import Store

from .drive import Driver, reading_script, settings
from .test_diagnosis_fakes import ROOMY

PRICES = """
[models.m]
api = "openai-chat"
model = "fake-model"
base_url = "http://127.0.0.1:9/v1"
context_size = 64000
[models.m.prices]
input = 2.0
output = 8.0
cached_input = 0.5
"""


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    config = tmp_path / "config.toml"
    config.write_text(PRICES)
    monkeypatch.setenv("NODWYN_CONFIG", str(config))
    store = Store(tmp_path / "data", fsync=False)
    with FakeServer(api="openai-chat", script=reading_script(4)) as fake:
        d = Driver(store, ROOMY, {"m": settings(fake.url, "m", "fake-model")}, "m")
        d.user("Read the modules.")
        d.request()
        d.request()
        fold = d.fold(d.results[0])
        d.request()
        d.request()
        d.log.close()
    assert fold
    return tmp_path / "data", d.log.id


def test_stats_prints_totals_and_the_request_table(session: tuple[Path, str]) -> None:
    root, sid = session
    res = CliRunner().invoke(cli, ["stats", sid[:12], "--root", str(root)])
    assert res.exit_code == 0, res.output
    assert "Token cache rate" in res.output and sid in res.output
    as_json = CliRunner().invoke(cli, ["stats", "latest", "--json", "--root", str(root)])
    data = orjson.loads(as_json.output)
    t = data["totals"]["all"]
    assert t["rate"] == pytest.approx(t["rate_cached"] / t["rate_prompt"])
    assert len(data["requests"]) == 4
    assert t["cost_unknown"] == 0 and t["cost_usd"] > 0  # priced from config.toml
    lines = [line for line in res.output.splitlines() if line.strip().split(" ")[0].isdigit()]
    assert len(lines) == 4 and "fold at seq" in res.output


def test_cache_prints_a_diagnosis_per_request(session: tuple[Path, str]) -> None:
    root, sid = session
    res = CliRunner().invoke(cli, ["cache", sid, "--root", str(root)])
    assert res.exit_code == 0, res.output
    assert "moved by us: fold at seq" in res.output
    assert "1 first" in res.output and "1 moved" in res.output
    data = orjson.loads(CliRunner().invoke(cli, ["cache", sid, "--json", "--root", str(root)]).output)
    assert [r["kind"] for r in data["requests"]] == ["first", "appended", "moved", "appended"]
    moved = data["requests"][2]  # the data, and the same words as the table
    assert [c["kind"] for c in moved["causes"]] == ["fold"] and moved["held"] is False
    assert moved["detail"].startswith("moved by us: fold at seq") and moved["detail"] in res.output


def test_an_unknown_session_is_a_clear_error(session: tuple[Path, str]) -> None:
    root, _ = session
    res = CliRunner().invoke(cli, ["stats", "nope", "--root", str(root)])
    assert isinstance(res.exception, NotFoundError) and "nodwyn sessions" in str(res.exception)
