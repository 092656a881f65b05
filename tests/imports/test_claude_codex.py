"""Claude Code transcripts and Codex rollouts, written here in the shapes those tools write, for
what the real samples (tests/imports/test_real_samples.py) do not hold: a sidechain inside the
parent's file, token_count events written twice, several Codex calls, and compaction."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from nodwyn.cli import cli, main
from nodwyn.errors import ImportFormatError
from nodwyn.imports import conversation, find, load
from nodwyn.log import Store
from nodwyn.values.content import AssistantMessage, ToolMessage


def jsonl(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return path


def claude_usage(fresh: int, read: int, write: int, out: int) -> dict[str, int]:
    return {
        "input_tokens": fresh,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
        "output_tokens": out,
    }


def claude_lines() -> list[dict[str, Any]]:
    base = {"sessionId": "s1", "cwd": "/w", "version": "2.0.28", "isSidechain": False}

    def u(uuid: str, content: Any, **kw: Any) -> dict[str, Any]:
        return {**base, "type": "user", "uuid": uuid, "message": {"role": "user", "content": content}, **kw}

    def a(uuid: str, mid: str, blocks: list[dict[str, Any]], usage: dict[str, int]) -> dict[str, Any]:
        msg = {
            "id": mid,
            "model": "claude-sonnet-4-5",
            "role": "assistant",
            "content": blocks,
            "usage": usage,
        }
        return {**base, "type": "assistant", "uuid": uuid, "requestId": "req_" + mid, "message": msg}

    return [
        {"type": "summary", "summary": "Fix the parser", "leafUuid": "x"},
        u("u1", "Fix the parser in p.py"),
        a(
            "a1",
            "msg_1",
            [{"type": "thinking", "thinking": "Look first.", "signature": "sig"}],
            claude_usage(3, 0, 9000, 5),
        ),
        a(
            "a2",
            "msg_1",
            [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "p.py"}}],
            claude_usage(3, 0, 9000, 40),
        ),
        u("u2", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "def parse(): ..."}]),
        {
            **base,
            "isSidechain": True,
            "type": "user",
            "uuid": "s1u",
            "message": {"role": "user", "content": "sub-task"},
        },
        a("a3", "msg_2", [{"type": "text", "text": "Fixed."}], claude_usage(10, 9000, 60, 8)),
        {
            **base,
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "b1",
            "content": "Conversation compacted",
        },
        u("u3", "This session is being continued... Summary: the parser was fixed.", isCompactSummary=True),
        u("u4", "Now add a test"),
        a("a4", "msg_3", [{"type": "text", "text": "Added."}], claude_usage(200, 0, 400, 6)),
    ]


def codex_lines() -> list[dict[str, Any]]:
    def line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": "2025-12-28T12:18:30.533Z", "type": kind, "payload": payload}

    def tokens(inp: int, cached: int, out: int) -> dict[str, Any]:
        last = {
            "input_tokens": inp,
            "cached_input_tokens": cached,
            "output_tokens": out,
            "reasoning_output_tokens": 0,
        }
        return line(
            "event_msg",
            {"type": "token_count", "info": {"total_token_usage": last, "last_token_usage": last}},
        )

    def msg(role: str, text: str) -> dict[str, Any]:
        kind = "output_text" if role == "assistant" else "input_text"
        return line(
            "response_item", {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}
        )

    return [
        line("session_meta", {"id": "c1", "cwd": "/w", "cli_version": "0.77.0", "instructions": None}),
        msg("user", "<environment_context>cwd /w</environment_context>"),
        msg("user", "list the files"),
        line("turn_context", {"cwd": "/w", "model": "gpt-5.2-codex"}),
        line("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "ls it"}]}),
        line(
            "response_item",
            {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"command":["ls"]}',
                "call_id": "call_1",
            },
        ),
        tokens(5000, 0, 30),
        tokens(5000, 0, 30),  # written twice: counts once
        line("response_item", {"type": "function_call_output", "call_id": "call_1", "output": "a.py\nb.py"}),
        msg("assistant", "Two files."),
        tokens(5100, 4992, 12),
        line("compacted", {"message": "Summary: the user listed two files."}),
        msg("user", "and now?"),
        msg("assistant", "Nothing else."),
        tokens(1200, 0, 4),
    ]


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "config.toml").write_text("")
    monkeypatch.setenv("NODWYN_CONFIG", str(tmp_path / "config.toml"))
    return tmp_path / "data"


def test_a_claude_code_transcript(tmp_path: Path, root: Path) -> None:
    path = jsonl(tmp_path / "s1.jsonl", claude_lines())
    [found] = find(path)
    assert found.kind == "claude-code"
    run = load(found)
    assert [type(m).__name__ for m in run.messages] == [
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "AssistantMessage",
        "UserMessage",
        "AssistantMessage",
    ]
    first = run.messages[1]
    assert (
        isinstance(first, AssistantMessage)
        and first.thinking == "Look first."
        and first.calls[0].name == "Read"
    )
    assert isinstance(run.messages[2], ToolMessage) and run.messages[2].name == "Read"
    assert run.notes == ("1 sidechain (sub-agent) lines left out",)
    u = [run.sent(k).usage for k in range(3)]
    assert u[0] is not None and (u[0].prompt_tokens, u[0].cached_tokens, u[0].output_tokens) == (9003, 0, 40)
    assert u[1] is not None and (u[1].prompt_tokens, u[1].cached_tokens) == (9070, 9000)
    # after the compaction the agent sent the summary and what followed, not the conversation
    assert run.sent(2).why == ("compaction",)
    view = run.view(2)
    assert view[1:] == (4,) and getattr(view[0], "why", None) == "compaction"
    res = CliRunner().invoke(cli, ["import", str(path), "--root", str(root)])
    assert res.exit_code == 0, res.output
    sid = res.output.strip().rsplit(" ", 1)[-1]
    with Store(root).open(sid) as log:
        assert conversation(log).messages == run.messages
    cache = orjson.loads(CliRunner().invoke(cli, ["cache", sid, "--json", "--root", str(root)]).output)
    kinds = [(d["kind"], [c["kind"] for c in d["causes"]]) for d in cache["requests"]]
    assert kinds == [("first", []), ("appended", []), ("moved", ["compaction"])]
    stats = orjson.loads(CliRunner().invoke(cli, ["stats", sid, "--json", "--root", str(root)]).output)
    assert (
        stats["totals"]["all"]["rate_cached"] == 9000 and stats["totals"]["all"]["cache_write_tokens"] == 9460
    )


def test_a_codex_rollout(tmp_path: Path, root: Path) -> None:
    path = jsonl(tmp_path / "rollout-2025-12-28T12-18-30-c1.jsonl", codex_lines())
    [found] = find(path)
    assert found.kind == "codex"
    run = load(found)
    assert len(run.replies) == 3 and run.model == "gpt-5.2-codex"
    reply = run.messages[2]
    assert isinstance(reply, AssistantMessage) and reply.thinking == "ls it" and reply.calls[0].id == "call_1"
    usage = [run.sent(k).usage for k in range(3)]
    assert [(x.prompt_tokens, x.cached_tokens) for x in usage if x is not None] == [
        (5000, 0),
        (5100, 4992),
        (1200, 0),
    ]
    assert run.sent(2).why == ("compaction",)
    res = CliRunner().invoke(cli, ["import", str(path), "--root", str(root)])
    assert res.exit_code == 0, res.output
    sid = res.output.strip().rsplit(" ", 1)[-1]
    cache = orjson.loads(CliRunner().invoke(cli, ["cache", sid, "--json", "--root", str(root)]).output)
    assert [d["kind"] for d in cache["requests"]] == ["first", "appended", "moved"]
    assert cache["requests"][2]["detail"].startswith("moved by the agent: compaction at seq ")


def test_a_codex_tool_output_given_as_content_items(tmp_path: Path) -> None:
    lines = codex_lines()
    items = [{"type": "input_text", "text": "a.py"}, {"type": "input_image", "image_url": "data:..."}]
    lines[8] = {**lines[8], "payload": {**lines[8]["payload"], "output": items}}
    run = load(find(jsonl(tmp_path / "rollout-x.jsonl", lines))[0])
    result = run.messages[3]
    assert isinstance(result, ToolMessage) and result.text == "a.py\n[input_image]"
    lines[8]["payload"]["output"] = 7
    with pytest.raises(ImportFormatError, match=r":9: payload.output: expected text, content items"):
        load(find(jsonl(tmp_path / "rollout-y.jsonl", lines))[0])


@pytest.mark.parametrize("fmt", ["claude", "codex"])
@pytest.mark.parametrize("how", ["truncated", "malformed"])
def test_a_damaged_file_gives_one_line_naming_its_line(
    tmp_path: Path, root: Path, fmt: str, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = claude_lines() if fmt == "claude" else codex_lines()
    name = "s1.jsonl" if fmt == "claude" else "rollout-x.jsonl"
    path = jsonl(tmp_path / name, lines)
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) - 40])
        want = f"{path}:{len(lines)}: not a JSON line"
    else:
        bad = data.replace(b'"content":"def parse(): ..."', b'"content":7').replace(
            b'"call_id":"call_1","output"', b'"call_id":1,"output"'
        )
        path.write_bytes(bad)
        want = f"{path}:5: message.content[0].content" if fmt == "claude" else f"{path}:9: payload.call_id"
    with pytest.raises(SystemExit) as done:
        main(["import", str(path), "--root", str(root)])
    out = capsys.readouterr()
    assert done.value.code == ImportFormatError.exit_code
    assert out.err.count("\n") == 1 and want in out.err, out.err
    assert Store(root).ids() == []


def long_rollout(calls: int) -> list[dict[str, Any]]:
    """A Codex rollout of ``calls`` tool rounds: long enough to be killed while it is written."""
    head, tail = codex_lines()[:4], codex_lines()[4:9]  # meta, task, turn; one round (call to output)
    rounds = []
    for k in range(calls):
        for item in tail:
            payload = item["payload"]
            if "call_id" in payload:
                payload = {**payload, "call_id": f"call_{k}"}
            rounds.append({**item, "payload": payload})
    return [*head, *rounds, codex_lines()[9]]


def test_a_killed_import_leaves_no_session_and_the_next_one_imports_it_whole(
    tmp_path: Path, root: Path
) -> None:
    path = jsonl(tmp_path / "rollout-2025-12-28T12-18-30-long.jsonl", long_rollout(1500))
    with subprocess.Popen(
        [str(Path(sys.executable).parent / "nodwyn"), "import", str(path), "--root", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        deadline = time.monotonic() + 120
        while not any(f.stat().st_size > 0 for f in root.glob(".staging/*/sessions/*/log.jsonl")):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.002)
        proc.kill()  # SIGKILL mid-write: no handler runs
        proc.wait()
    assert Store(root).ids() == []  # nothing half-written among the sessions
    [left] = (root / ".staging").iterdir()
    res = CliRunner().invoke(cli, ["import", str(path), "--root", str(root)])
    assert res.exit_code == 0 and "as session " in res.output, res.output
    assert not left.exists() and list((root / ".staging").iterdir()) == []
    [sid] = Store(root).ids()
    with Store(root).open(sid) as log:
        assert conversation(log).messages == load(find(path)[0]).messages
