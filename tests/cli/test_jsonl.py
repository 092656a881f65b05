"""``nodwyn run --jsonl`` (issue 26, item 1; ADR 0380): the real command against a fake provider on
127.0.0.1, each line validated against docs/jsonl.schema.json, the lines read while the run goes on,
their seqs checked against the session log."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest

from nodwyn.cli.jsonl import JSONL_VERSION, SHOWN
from nodwyn.fakes import FakeServer
from nodwyn.log import Store

from .test_run import NODWYN, call, configure, nodwyn

SCHEMA = orjson.loads((Path(__file__).parents[2] / "docs" / "jsonl.schema.json").read_bytes())


def lines_of(stdout: str) -> list[dict[str, Any]]:
    docs = [orjson.loads(line) for line in stdout.splitlines()]
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for doc in docs:
        validator.validate(doc)
    return docs


def test_the_schema_is_itself_valid_and_versioned() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$defs"]["session"]["properties"]["version"] == {"const": JSONL_VERSION}
    assert str(JSONL_VERSION) in SCHEMA["$id"]


@pytest.mark.needs("bwrap")
def test_a_real_run_as_json_lines_matches_the_schema_and_the_log(env: dict[str, str]) -> None:
    Path(env["WS"], "big.txt").write_text("".join(f"line {n}\n" for n in range(1000)))
    script: list[dict[str, Any]] = [
        {
            "thinking": "Read it first.",
            "text": "Looking.\n",
            "calls": [call("fs-read", "r1", path="big.txt")],
        },
        {"calls": [call("fs-edit", "e1", path="calc.py", old="a - b", new="a + b")]},
        {"text": "Fixed: add now adds."},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        done = nodwyn(env, "run", "Fix calc.py.", "--yes", "--jsonl")
    assert done.returncode == 0, done.stderr
    docs = lines_of(done.stdout)
    types = [d["type"] for d in docs]
    assert types[0] == "session" and types[-1] == "result"
    assert types.count("request") == 3 and types.count("reply") == 3
    assert types.count("tool_call") == 2 and types.count("tool_result") == 2
    session, result = docs[0], docs[-1]
    assert session["version"] == JSONL_VERSION and session["model"] == "chat"
    assert session["recipe"].startswith("window-v") and session["approval"] == "full-auto"
    assert result["text"] == "Fixed: add now adds." and result["exit"] == 0 and result["stopped"] is None
    assert result["session"] == session["session"] and result["requests"] == 3
    first = docs[: types.index("reply")]  # the first reply's deltas, as they streamed (ADR 0430)
    thinking = "".join(d["text"] for d in first if d["type"] == "delta" and d["kind"] == "thinking")
    said = "".join(d["text"] for d in first if d["type"] == "delta" and d["kind"] == "text")
    assert thinking == "Read it first." and said == "Looking.\n"
    read_result = next(d for d in docs if d["type"] == "tool_result" and d["name"] == "fs-read")
    assert read_result["truncated"] and len(read_result["text"]) == SHOWN + 1  # cut, marked "…"
    with Store(Path(env["NODWYN_HOME"])).open(session["session"]) as log:
        events = {e.seq: e for e in log.read(1)}
    for doc in docs:
        if doc["type"] == "request":
            assert events[doc["seq"]].kind == "llm.req"
            assert events[doc["seq"]].data["estimate"] == doc["estimate"]
        if doc["type"] == "reply":
            assert events[doc["seq"]].kind == "llm.resp"
        if doc["type"] == "tool_call":  # the seq of the reply that made it
            calls = events[doc["seq"]].data["response"]["calls"]
            assert doc["id"] in [c["id"] for c in calls]
        if doc["type"] == "tool_result":  # the seq of its tool.result, whole in the log
            logged = events[doc["seq"]]
            assert logged.kind == "tool.result" and logged.data["call_id"] == doc["id"]
            assert logged.data["text"].startswith(doc["text"].rstrip("…"))
    assert "llm.req" not in done.stderr and "[request" not in done.stderr  # stdout is the stream


@pytest.mark.needs("bwrap")
def test_a_turn_without_an_answer_carries_its_reason_on_the_last_line(env: dict[str, str]) -> None:
    with FakeServer(api="openai-chat", script=[{"text": ""}]) as fake:
        configure(env, fake.url)
        done = nodwyn(env, "run", "Do it.", "--jsonl")
    assert done.returncode == 17
    docs = lines_of(done.stdout)
    note = next(d for d in docs if d["type"] == "note")
    assert "no text and no tool calls" in note["text"]
    assert docs[-1]["type"] == "result" and docs[-1]["stopped"] == "empty reply" and docs[-1]["exit"] == 17
    assert docs[-1]["why"] == note["text"]
    assert sum("no text and no tool calls" in line for line in done.stderr.splitlines()) == 1  # for people


@pytest.mark.needs("bwrap")
def test_lines_arrive_while_the_run_is_still_going(env: dict[str, str]) -> None:
    script: list[dict[str, Any]] = [{"calls": [call("shell", "s1", command="sleep 4")]}, {"text": "Slept."}]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        proc = subprocess.Popen(
            [*NODWYN, "run", "Sleep.", "--yes", "--jsonl"],
            env=env,
            cwd=env["WS"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        seen = []
        for line in proc.stdout:
            seen.append(orjson.loads(line)["type"])
            if seen[-1] == "tool_call":
                running = proc.poll() is None  # the command is sleeping: the run is not over
                break
        rest, _ = proc.communicate(timeout=120)
    assert running and seen[:2] == ["session", "request"]
    assert proc.returncode == 0
    assert lines_of(rest)[-1]["text"] == "Slept."
