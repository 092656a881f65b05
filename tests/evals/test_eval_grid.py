"""``nodwyn eval`` as a person runs it: the real command in a subprocess, a 2 × 2 grid of 2 runs
each against two fake providers on 127.0.0.1 (one per variant), on local workers and on a local
Ray cluster; and a worker killed mid-run, retried once, nothing lost or counted twice."""

from __future__ import annotations

import html
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

from nodwyn.console.app import make_app
from nodwyn.evals.gather import verified
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.testing import isolated_env

NODWYN = str(Path(sys.executable).parent / "nodwyn")


def _env(tmp_path: Path, urls: dict[str, str]) -> dict[str, str]:
    env = isolated_env(tmp_path, PATH=os.environ.get("PATH", ""))
    entries = "".join(
        f'[models.{name}]\napi = "openai-chat"\nmodel = "fake-model"\nbase_url = "{url}"\n'
        "context_size = 32000\n\n"
        for name, url in urls.items()
    )
    Path(env["NODWYN_CONFIG"]).write_text(f'[control]\nmodel = "{next(iter(urls))}"\n\n{entries}')
    return env


def _spec(tmp_path: Path, variants: list[str], runs: int, tasks: str = "both") -> Path:
    ws = tmp_path / "tasks" / "ws"
    ws.mkdir(parents=True)
    (ws / "marker.txt").write_text("here\n")
    text = f'runs = {runs}\norder = "balanced"\n'
    text += (
        '[[task]]\nname = "answer"\nworkspace = "tasks/ws"\nprompt = "What is six times seven?"\n'
        "check = 'test \"$NODWYN_ANSWER\" = 42 && test -f marker.txt'\ntimeout = 60\n"
    )
    if tasks == "both":
        text += (
            '[[task]]\nname = "present"\nworkspace = "tasks/ws"\nprompt = "Is marker.txt there?"\n'
            "check = 'test -f marker.txt'\ntimeout = 60\n"
        )
    for v in variants:
        text += f'[[variant]]\nname = "{v}"\nmodel = "{v}"\nrecipe = "window-v20"\n'
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return path


def _eval(env: dict[str, str], *args: str, timeout: float = 300) -> dict[str, Any]:
    done = subprocess.run(
        [NODWYN, "eval", *args, "--json"], env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr
    doc = orjson.loads(done.stdout)
    assert isinstance(doc, dict)
    return doc


def _check_grid(env: dict[str, str], doc: dict[str, Any], fakes: dict[str, FakeServer]) -> None:
    rows = doc["runs"]
    keys = Counter((r["task"], r["variant"], r["run"]) for r in rows)
    grid = [(t, v, n) for t in ("answer", "present") for v in ("good", "bad") for n in (1, 2)]
    assert keys == Counter(grid)
    for r in rows:  # graded right: only "good" answers 42; both leave marker.txt where it was
        assert r["solved"] == (r["task"] == "present" or r["variant"] == "good"), r
        assert r["requests"] == 1 and r["replies"] == 1 and r["attempt"] == 1
    assert doc["lost"] == []
    for name, fake in fakes.items():  # each session went over the wire to its variant's model
        assert len(fake.requests) == 4, name
    store = Store(Path(env["NODWYN_HOME"]))
    sessions = {r["session"] for r in rows}
    assert len(sessions) == 8 and sessions == set(store.ids())
    for sid in sessions:
        assert verified(store, sid) == 1  # every session replays to its recorded digest
    cells = {(c["variant"], c["task"]): c["solved"] for c in doc["cells"]}
    assert cells[("bad", "answer")]["value"] == 0.0 and cells[("good", "answer")]["value"] == 1.0
    assert 0 < cells[("good", None)]["low"] < 1.0 == cells[("good", None)]["high"]
    solved = dict(doc["differences"][0]["figures"])["solved"]
    assert doc["differences"][0]["variant"] == "bad" and solved["value"] == -0.5 and solved["n"] == 2
    again = _eval(env, "report", doc["eval"])  # from the logs alone, the same rows
    assert again["runs"] == rows
    app = make_app(Path(env["NODWYN_HOME"]))  # the console's page of the eval, from the same logs
    with TestClient(app, base_url="http://127.0.0.1") as console:
        page = console.get(f"/e/{doc['eval']}")
        api = console.get(f"/api/e/{doc['eval']}").json()
        missing = console.get("/e/ev-000000000000")
    assert page.status_code == 200 and 'id="eval-table"' in page.text
    assert api["runs"] == rows and "bad - good, paired by task (n=2): solved -0.50" in api["table"]
    assert html.escape(api["table"]) in page.text and missing.status_code == 404


def _fakes() -> dict[str, FakeServer]:
    return {
        "good": FakeServer(api="openai-chat", script=[{"text": "42"}] * 4),
        "bad": FakeServer(api="openai-chat", script=[{"text": "41"}] * 4),
    }


def test_a_2x2_grid_on_two_local_workers(tmp_path: Path) -> None:
    fakes = _fakes()
    with fakes["good"], fakes["bad"]:
        env = _env(tmp_path, {n: f.url for n, f in fakes.items()})
        doc = _eval(env, str(_spec(tmp_path, ["good", "bad"], 2)), "--workers", "2")
        _check_grid(env, doc, fakes)
        resumed = _eval(env, str(_spec_again(tmp_path)), "--resume")  # nothing left to run
        assert resumed["runs"] == doc["runs"] and all(len(f.requests) == 4 for f in fakes.values())


def _spec_again(tmp_path: Path) -> Path:
    return tmp_path / "spec.toml"


def test_a_2x2_grid_on_a_local_ray_cluster(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    fakes = _fakes()
    with fakes["good"], fakes["bad"]:
        env = _env(tmp_path, {n: f.url for n, f in fakes.items()})
        doc = _eval(env, str(_spec(tmp_path, ["good", "bad"], 2)), "--ray", "local", timeout=600)
        _check_grid(env, doc, fakes)


@pytest.mark.parametrize(
    "engine", [["--workers", "1"], ["--ray", "local", "--workers", "1"]], ids=["local", "ray"]
)
def test_a_worker_killed_mid_run_is_retried_once_and_counted_once(tmp_path: Path, engine: list[str]) -> None:
    if "--ray" in engine:
        pytest.importorskip("ray")
    script: list[dict[str, Any]] = [{"stall": {"when": "accept"}}, {"text": "42"}, {"text": "42"}]
    with FakeServer(api="openai-chat", script=script) as fake:
        env = _env(tmp_path, {"good": fake.url})
        spec = _spec(tmp_path, ["good"], 2, tasks="one")
        proc = subprocess.Popen(
            [NODWYN, "eval", str(spec), *engine, "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        home = Path(env["NODWYN_HOME"])
        deadline = time.monotonic() + 300
        while not (pids := list(home.glob("evals/*/work/answer/good/1/attempt-1/pid"))) or not fake.requests:
            assert time.monotonic() < deadline and proc.poll() is None, "run 1 never reached the model"
            time.sleep(0.1)
        os.kill(int(pids[0].read_text()), signal.SIGKILL)  # the session's process dies mid-request
        out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    assert out.startswith("{"), (out[:2000], err[-2000:])
    doc = orjson.loads(out)
    rows = sorted(doc["runs"], key=lambda r: r["run"])
    assert [(r["run"], r["attempt"], r["solved"]) for r in rows] == [(1, 2, True), (2, 1, True)]
    assert doc["lost"] == [] and len(fake.requests) == 3  # the stalled one, the retry, run 2
    store = Store(home)
    assert sorted(store.ids()) == sorted(r["session"] for r in rows)  # the dead attempt's is not there
    for sid in store.ids():
        assert verified(store, sid) == 1


def test_a_run_past_its_timeout_counts_unsolved_with_its_reason(tmp_path: Path) -> None:
    with FakeServer(api="openai-chat", script=[{"stall": {"when": "accept"}}]) as fake:
        env = _env(tmp_path, {"good": fake.url})
        spec = _spec(tmp_path, ["good"], 1, tasks="one")
        spec.write_text(spec.read_text().replace("timeout = 60", "timeout = 4"))
        doc = _eval(env, str(spec), "--workers", "1")
    (row,) = doc["runs"]
    assert row["solved"] is False and row["reason"].startswith("timeout after 4 s"), row
    assert doc["lost"] == []
    cell = {(c["variant"], c["task"]): c for c in doc["cells"]}[("good", "answer")]
    assert cell["solved"]["n"] == 1 and cell["solved"]["value"] == 0.0
