"""``nodwyn import`` on real Claude Code transcripts and a real Codex rollout (tests/data/imports,
SOURCES.md): the imported session's token cache rate is the one the provider reported in the file
(its own sums, counted once per API reply), ``nodwyn cache`` diagnoses every request, and a
truncated copy gives one line naming file and line and leaves no session behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from nodwyn.cli import main
from nodwyn.errors import ImportFormatError
from nodwyn.imports import find, load
from nodwyn.log import Store
from nodwyn.values.content import AssistantMessage, ToolMessage

from .test_import import imported, nodwyn

DATA = Path(__file__).resolve().parents[1] / "data" / "imports"
# Claude Code 2.1.114: parallel tool calls written one line each, each followed by its result
PARALLEL = DATA / "claude-code" / "ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"
# Claude Code 1.0.56: a reply's first line carries a partial output_tokens, its last the final one
OLD = DATA / "claude-code" / "12a546d1-83a7-49a6-abba-5400db340b43.jsonl"
# a sub-agent's own transcript (every line isSidechain), from the same session as PARALLEL
SUBAGENT = DATA / "claude-code" / "agent-a6aa8ad077d9ea083.jsonl"
CLAUDE = [PARALLEL, OLD, SUBAGENT]
CODEX = DATA / "codex" / "session-01.jsonl"
REAL = [*CLAUDE, CODEX]


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "config.toml").write_text("")
    monkeypatch.setenv("NODWYN_CONFIG", str(tmp_path / "config.toml"))
    return tmp_path / "data"


def lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]


def claude_replies(path: Path) -> dict[str, dict[str, int]]:
    """Each API reply of the file's conversation (sidechains left out unless the file is only
    sidechain) by ``message.id``, with the usage of its last line, in file order."""
    rows = lines(path)
    main_only = any(r.get("type") == "assistant" and not r.get("isSidechain") for r in rows)
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        if r.get("type") == "assistant" and not (main_only and r.get("isSidechain")):
            out[r["message"]["id"]] = r["message"]["usage"]
    return out


def reported(path: Path) -> list[tuple[int, int, int | None, int]]:
    """(prompt, cache read, cache write, output) of each model call as the file reports it."""
    if path.parent.name == "codex":
        infos: list[dict[str, Any]] = []
        for r in lines(path):
            p = r.get("payload") or {}
            counted = r["type"] == "event_msg" and p.get("type") == "token_count" and p.get("info")
            if counted and (not infos or p["info"] != infos[-1]):  # a repeat counts once
                infos.append(p["info"])
        return [
            (u["input_tokens"], u["cached_input_tokens"], None, u["output_tokens"])
            for u in (i["last_token_usage"] for i in infos)
        ]
    return [
        (
            u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"],
            u["cache_read_input_tokens"],
            u["cache_creation_input_tokens"],
            u["output_tokens"],
        )
        for u in claude_replies(path).values()
    ]


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name[:8])
def test_the_cache_rate_is_the_one_the_file_reports(root: Path, path: Path) -> None:
    sid = imported(root, path)
    calls = reported(path)
    res = nodwyn(root, "stats", sid, "--json")
    assert res.exit_code == 0, res.output
    doc = orjson.loads(res.output)
    totals = doc["totals"]["all"]
    assert totals["requests"] == totals["rate_replies"] == len(calls)
    assert totals["rate_prompt"] == sum(c[0] for c in calls)
    assert totals["rate_cached"] == sum(c[1] for c in calls)
    assert totals["output_tokens"] == sum(c[3] for c in calls)
    assert 0 < totals["rate"] < 1
    per_request = [(r["usage"]["prompt_tokens"], r["usage"]["cached_tokens"]) for r in doc["requests"]]
    assert per_request == [c[:2] for c in calls]
    if path.parent.name == "claude-code":
        assert totals["cache_write_tokens"] == sum(c[2] or 0 for c in calls)
    # no price for these models in the config: the cost is unknown, never $0
    assert totals["cost_unknown"] == len(calls)


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name[:8])
def test_each_request_is_diagnosed_from_what_the_file_reports(root: Path, path: Path) -> None:
    sid = imported(root, path)
    res = nodwyn(root, "cache", sid, "--json")
    assert res.exit_code == 0, res.output
    found = orjson.loads(res.output)["requests"]
    calls = reported(path)
    assert len(found) == len(calls)
    assert found[0]["kind"] == "first" and all(d["observed"] for d in found)
    # none of these sessions compacts: every later request extends its predecessor
    assert all(d["held"] for d in found[1:])
    assert {d["kind"] for d in found[1:]} <= {"appended", "server miss"}
    for d, (prompt, read, _, _) in zip(found, calls, strict=True):
        assert (d["prompt_tokens"], d["cached_tokens"]) == (prompt, read)
        if d["kind"] == "server miss":  # the provider read less than the held prefix
            assert d["shortfall"] > 0 and read < d["expected"]


def test_parallel_tool_calls_written_one_line_each_are_one_reply() -> None:
    """Claude Code 2.1 writes a reply's parallel tool calls one line each, each followed by the
    user line with its result; the reply is still one request (its usage once), its calls first
    and their results after it, as the next request sent them."""
    [found] = find(PARALLEL)
    run = load(found)
    ids = list(claude_replies(PARALLEL))
    assert len(ids) == 17 and len(run.replies) == 17
    six = [m for m in run.messages if isinstance(m, AssistantMessage) and len(m.calls) == 6]
    assert len(six) == 2
    at = run.messages.index(six[0])
    results = run.messages[at + 1 : at + 7]
    assert all(isinstance(m, ToolMessage) for m in results)
    assert [m.call_id for m in results if isinstance(m, ToolMessage)] == [c.id for c in six[0].calls]


def test_an_old_transcripts_reply_usage_is_its_last_line(root: Path) -> None:
    """Claude Code 1.0 wrote each line of a reply as it streamed: the first line's
    output_tokens is partial, the last line's is the reply's."""
    rows = [r for r in lines(OLD) if r.get("type") == "assistant"]
    first: dict[str, int] = {}
    for r in rows:
        first.setdefault(r["message"]["id"], r["message"]["usage"]["output_tokens"])
    last = {i: u["output_tokens"] for i, u in claude_replies(OLD).items()}
    assert sum(first.values()) < sum(last.values())
    sid = imported(root, OLD)
    totals = orjson.loads(nodwyn(root, "stats", sid, "--json").output)["totals"]["all"]
    assert totals["output_tokens"] == sum(last.values())


def test_a_sub_agents_transcript_is_its_own_run() -> None:
    assert all(r.get("isSidechain") for r in lines(SUBAGENT))
    [found] = find(SUBAGENT)
    run = load(found)
    assert found.kind == "claude-code" and run.notes == ()
    assert len(run.replies) == len(claude_replies(SUBAGENT)) == 5
    assert run.model == "claude-opus-4-7"


def test_the_codex_rollout_keeps_its_instructions_and_model() -> None:
    [found] = find(CODEX)
    run = load(found)
    assert found.kind == "codex" and run.model == "gpt-5.5"
    assert run.system == "[REDACTED_BASE_INSTRUCTIONS]"
    reply = run.messages[-1]
    assert isinstance(reply, AssistantMessage) and reply.text == "[REDACTED_ASSISTANT_TEXT]"
    usage = run.sent(0).usage
    assert usage is not None and (usage.prompt_tokens, usage.cached_tokens, usage.output_tokens) == (
        22539,
        20864,
        10,
    )


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name[:8])
def test_a_truncated_copy_gives_one_line_and_leaves_nothing(
    tmp_path: Path, root: Path, path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = path.read_bytes()
    cut = len(data) * 2 // 3
    while data[cut - 1 : cut] == b"\n":  # end inside a line, as an interrupted copy does
        cut -= 1
    bad = tmp_path / "src" / path.name
    bad.parent.mkdir()
    bad.write_bytes(data[:cut])
    line = data[:cut].count(b"\n") + 1
    with pytest.raises(SystemExit) as done:
        main(["import", str(bad), "--root", str(root)])
    out = capsys.readouterr()
    assert done.value.code == ImportFormatError.exit_code, out
    [err] = out.err.strip().splitlines()
    assert f"{bad}:{line}: not a JSON line" in err and "truncated" in err, err
    assert out.out == ""
    assert Store(root).ids() == []
