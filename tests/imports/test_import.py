"""``nodwyn import`` on the committed public runs (tests/data/imports): each format becomes an
imported session whose stats, cache diagnosis and conversation come from the source's own records;
a damaged file gives one line and leaves no session; a second import of the same bytes is refused."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result

from nodwyn.cli import cli, main
from nodwyn.errors import ImportFormatError
from nodwyn.imports import conversation, find, load
from nodwyn.log import Store
from nodwyn.replay.exact import verify_all
from nodwyn.values.events import LLM_REQ, LLM_SEEN

DATA = Path(__file__).resolve().parents[1] / "data" / "imports"
V2 = DATA / "mini-swe-agent-v2" / "marshmallow-code__marshmallow-1359.traj.json"
V1 = DATA / "mini-swe-agent-v1" / "scikit-learn__scikit-learn-10908.traj.json"
OPENHANDS = DATA / "openhands-v1" / "3880c06039224ff586eff2db1186474e"
SWEAGENT = DATA / "swe-agent" / "swe-agent__test-repo-i1.traj"
CLAUDE = DATA / "claude-code" / "sample_session.jsonl"
ALL = [V2, V1, OPENHANDS, SWEAGENT, CLAUDE]


PRICES = """
[models.ds]
api = "openai-chat"
model = "deepseek-chat"
base_url = "http://127.0.0.1:9/v1"
context_size = 64000
[models.ds.prices]
input = 0.27
output = 1.10
cached_input = 0.07
"""


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "config.toml"
    config.write_text(PRICES)
    monkeypatch.setenv("NODWYN_CONFIG", str(config))
    return tmp_path / "data"


def nodwyn(root: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--root", str(root)])


def imported(root: Path, path: Path) -> str:
    res = nodwyn(root, "import", str(path))
    assert res.exit_code == 0, res.output
    assert "as session " in res.output, res.output
    return res.output.strip().rsplit(" ", 1)[-1]


def stats(root: Path, sid: str) -> dict[str, Any]:
    res = nodwyn(root, "stats", sid, "--json")
    assert res.exit_code == 0, res.output
    out: dict[str, Any] = orjson.loads(res.output)
    return out


def diagnoses(root: Path, sid: str) -> list[dict[str, Any]]:
    res = nodwyn(root, "cache", sid, "--json")
    assert res.exit_code == 0, res.output
    out: list[dict[str, Any]] = orjson.loads(res.output)["requests"]
    return out


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.parent.name)
def test_each_format_reads_back_as_the_conversation_its_loader_made(root: Path, path: Path) -> None:
    sid = imported(root, path)
    [found] = find(path)
    run = load(found)
    with Store(root).open(sid) as log:
        back = conversation(log)
        kinds = [e.kind for e in log.read()]
        claimed = [v for v in verify_all(log)]
    assert back.messages == run.messages
    assert back.format == run.format and back.system == run.system and back.tools == run.tools
    assert [s.usage for s in back.requests] == [run.sent(k).usage for k in range(len(run.replies))]
    assert [s.view for s in back.requests] == [run.sent(k).view for k in range(len(run.replies))]
    # one observed request per reply, and none that exact replay would claim to prove
    assert kinds.count(LLM_SEEN) == len(run.replies) and LLM_REQ not in kinds
    assert claimed == []


def test_the_token_cache_rate_is_what_deepseek_reported(root: Path) -> None:
    sid = imported(root, V2)
    doc = orjson.loads(V2.read_bytes())
    usages = [m["extra"]["response"]["usage"] for m in doc["messages"] if m["role"] == "assistant"]
    s = stats(root, sid)
    totals = s["totals"]["all"]
    assert totals["rate_prompt"] == sum(u["prompt_tokens"] for u in usages)
    assert totals["rate_cached"] == sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages)
    assert 0 < totals["rate"] < 1
    assert all(r["observed"] for r in s["requests"])
    # priced at the config entry serving that model, recorded in the session's recipe
    assert totals["cost_unknown"] == 0 and totals["cost_usd"] > 0


def test_a_run_that_reports_no_usage_has_an_unknown_rate_never_0(root: Path) -> None:
    sid = imported(root, SWEAGENT)
    totals = stats(root, sid)["totals"]["all"]
    assert totals["rate"] is None and totals["rate_replies"] == 0
    assert totals["cost_unknown"] == totals["replies"]  # no model, no price: unknown, never $0
    res = nodwyn(root, "stats", sid)
    assert "Token cache rate        unknown" in res.output and "0%" not in res.output.split("\n")[1]


def test_openhands_condensations_are_moved_by_the_agent(root: Path) -> None:
    sid = imported(root, OPENHANDS)
    found = diagnoses(root, sid)
    moved = [d for d in found if d["kind"] == "moved"]
    assert moved, [d["kind"] for d in found]
    for d in moved:
        assert d["observed"] is True
        assert [c["kind"] for c in d["causes"]] == ["condensation"]
        assert str(d["detail"]).startswith("moved by the agent: condensation at seq ")
        assert str(d["first_difference"]).startswith("message ")
    # the others extended their predecessor, or the provider read less than it held
    assert {d["kind"] for d in found} - {"moved"} <= {"first", "appended", "server miss"}
    # the reply after a condensation read only about the system prompt and tools from the cache
    assert all(int(d["cached_tokens"]) < int(d["prompt_tokens"]) // 2 for d in moved)


def test_gemini_implicit_cache_misses_are_server_misses(root: Path) -> None:
    sid = imported(root, V1)
    found = diagnoses(root, sid)
    kinds = {str(d["kind"]) for d in found}
    assert kinds <= {"first", "appended", "server miss"}, kinds
    misses = [d for d in found if d["kind"] == "server miss"]
    assert misses and all(str(d["detail"]).startswith("server miss: the agent's prefix held") for d in misses)


def test_importing_the_same_file_twice_names_the_session_that_holds_it(root: Path) -> None:
    sid = imported(root, V2)
    res = nodwyn(root, "import", str(V2))
    assert res.exit_code == 0, res.output
    assert res.output.strip() == f"already imported: {V2} is session {sid}"
    assert len(Store(root).ids()) == 1


def _damaged(tmp_path: Path, path: Path, how: str) -> Path:
    """A copy of ``path`` cut in the middle (truncated) or with one field of the wrong type."""
    target = tmp_path / "src" / path.name
    target.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir():
        shutil.copytree(path, target)
        victim = sorted((target / "events").glob("event-*.json"))[5]
    else:
        shutil.copy(path, target)
        victim = target
    data = victim.read_bytes()
    if how == "truncated":
        victim.write_bytes(data[: len(data) * 2 // 3])
    else:
        key = b'"content"' if b'"content"' in data else b'"kind"'
        victim.write_bytes(data.replace(key + b":", key + b':12345,"was":', 1))
    return target


@pytest.mark.parametrize("how", ["truncated", "malformed"])
@pytest.mark.parametrize("path", ALL, ids=lambda p: p.parent.name)
def test_a_damaged_file_gives_one_line_and_leaves_nothing(
    tmp_path: Path, root: Path, path: Path, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _damaged(tmp_path, path, how)
    with pytest.raises(SystemExit) as done:
        main(["import", str(bad), "--root", str(root)])
    out = capsys.readouterr()
    assert done.value.code == ImportFormatError.exit_code, out
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and str(tmp_path / "src") in lines[0], out
    assert out.out == ""
    assert Store(root).ids() == []
