"""``nodwyn whatif`` on sessions made by ``nodwyn import``: the table and the JSON hold every
policy, agree with the library run on the same file, cost at the session's prices (unknown
without), and a bad budget is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nodwyn.imports import conversation, find, load
from nodwyn.log import Store
from nodwyn.values.model import Prices
from nodwyn.whatif import POLICIES, compare, recorded

PRICES = Prices(input=0.27, output=1.1, cached_input=0.07)


def nodwyn(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "nodwyn"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def trajectory(path: Path, steps: int, model: str = "deepseek-chat") -> Path:
    """A mini-swe-agent v2 trajectory (the format of tests/imports' samples), ``steps`` tool calls."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
        {"role": "user", "content": "Fix the failing test in calc.py."},
    ]
    for k in range(steps):
        call = {"id": f"call_{k}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
        usage = {"prompt_tokens": 1000 * (k + 1), "completion_tokens": 50}
        messages.append(
            {
                "role": "assistant",
                "content": f"Step {k}: look at the next part.",
                "tool_calls": [call],
                "extra": {"response": {"model": model, "usage": usage}},
            }
        )
        out = "\n".join(f"line {k}.{j} of the output" for j in range(120))
        messages.append(
            {"role": "tool", "tool_call_id": f"call_{k}", "content": f"<returncode>0</returncode>\n{out}"}
        )
    messages.append({"role": "assistant", "content": "Done.", "extra": {"response": {"model": model}}})
    path.write_text(json.dumps({"trajectory_format": "mini-swe-agent-1.1", "messages": messages, "info": {}}))
    return path


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "config.toml"
    config.write_text(
        '[models.ds]\napi = "openai-chat"\nmodel = "deepseek-chat"\nbase_url = "http://127.0.0.1:9"\n'
        "context_size = 64000\nprices = { input = 0.27, output = 1.1, cached_input = 0.07 }\n"
    )
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "NODWYN_HOME": str(tmp_path / "home"),
        "NODWYN_CONFIG": str(config),
    }


def test_whatif_on_an_imported_session_matches_the_library_and_prices_it(
    env: dict[str, str], tmp_path: Path
) -> None:
    path = trajectory(tmp_path / "run.traj.json", 24)
    done = nodwyn(env, "import", str(path))
    assert done.returncode == 0, done.stderr
    table = nodwyn(env, "whatif", "latest", "--budget", "8k")
    as_json = nodwyn(env, "whatif", "latest", "--budget", "8k", "--json")
    assert table.returncode == 0 and as_json.returncode == 0, table.stderr + as_json.stderr
    lines = table.stdout.splitlines()
    assert "at a budget of 8,192 tokens" in lines[0]
    for name in POLICIES:
        assert any(line.startswith(name + " ") for line in lines), name
    doc = json.loads(as_json.stdout)
    got = {p["policy"]: p for p in doc["policies"]}
    assert list(got) == ["as-sent", *POLICIES] and doc["sessions_without_prices"] == 0
    # mini-swe-agent sends the whole conversation every time: as sent is the minimum's policy
    assert {k: v for k, v in got["as-sent"].items() if k not in ("policy", "models")} == {
        k: v for k, v in got["whole"].items() if k not in ("policy", "models")
    }
    expected = compare([load(f) for f in find(path)], 8192, PRICES)
    for name, f in expected.items():
        g = got[name]
        assert (g["requests"], g["side_calls"], g["over_budget"]) == (f.requests, f.side_calls, f.over_budget)
        assert g["uncached_tokens"] == f.uncached_tokens and g["cached_share"] == round(f.cached_share, 4)
        assert f.usd is not None and g["usd"] == pytest.approx(f.usd, abs=1e-6)
    assert got["whole"]["uncached_vs_minimum"] == 1.0 and got["whole"]["over_budget"] > 0
    assert got["nodwyn"]["over_budget"] == 0 and got["nodwyn"]["requests"] == 25
    # 50 events stay under max_size 80, so the condenser acts only when a request is over the budget
    assert got["openhands"]["side_calls"] > 0 and got["openhands"]["over_budget"] == 0
    assert got["claude-code"]["side_calls"] > 0 and got["nodwyn"]["usd"] < got["sliding"]["usd"]


def test_a_session_without_prices_costs_unknown_and_a_bad_budget_is_one_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    path = trajectory(tmp_path / "run.traj.json", 3, model="unpriced-model")
    assert nodwyn(env, "import", str(path)).returncode == 0
    table = nodwyn(env, "whatif", "latest")
    assert table.returncode == 0, table.stderr
    assert all(line.endswith("unknown") for line in table.stdout.splitlines()[2:9])
    assert json.loads(nodwyn(env, "whatif", "latest", "--json").stdout)["policies"][0]["usd"] is None
    bad = nodwyn(env, "whatif", "latest", "--budget", "lots")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--budget 'lots'" in bad.stderr


DATA = Path(__file__).resolve().parents[1] / "data" / "imports"
SAMPLES = sorted(p for fmt in DATA.iterdir() if fmt.is_dir() for p in fmt.iterdir())


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.parent.name + "/" + p.name[:24])
def test_whatif_on_each_committed_public_sample(env: dict[str, str], sample: Path) -> None:
    """Each format's real sample (tests/data/imports/SOURCES.md) imported with ``nodwyn import``,
    then ``nodwyn whatif`` on it: the figures are the library's on the same file, the minimum's
    policy costs exactly the minimum, and nodwyn's window is never over when the whole is not."""
    done = nodwyn(env, "import", str(sample))
    assert done.returncode == 0, done.stderr
    shown = nodwyn(env, "whatif", "latest", "--budget", "4k", "--json")
    assert shown.returncode == 0, shown.stderr
    got = {p["policy"]: p for p in json.loads(shown.stdout)["policies"]}
    runs = [load(f) for f in find(sample)]
    expected = compare(runs, 4096)
    store = Store(Path(env["NODWYN_HOME"]))
    with store.open(store.resolve("latest")) as log:
        records = recorded.views(conversation(log)) is not None  # what the imported session records
    assert list(got) == (["as-sent"] if records else []) + list(POLICIES)
    for name, f in expected.items():
        g = got[name]
        assert (g["requests"], g["side_calls"], g["over_budget"]) == (f.requests, f.side_calls, f.over_budget)
        assert (g["uncached_tokens"], g["visible"]) == (f.uncached_tokens, round(f.visible, 4)), name
    assert got["nodwyn"]["requests"] == sum(len(r.replies) for r in runs) > 0
    assert got["whole"]["uncached_vs_minimum"] == 1.0 and got["whole"]["visible"] == 1.0
    assert got["nodwyn"]["over_budget"] <= got["whole"]["over_budget"]
