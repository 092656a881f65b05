"""Honest ends of ``nodwyn run`` (issue 25), the real command against a fake provider on 127.0.0.1:
a call the model did not write whole, or that names no tool here, goes back to the model as a tool
error and the turn goes on; a turn that ends without a whole answer exits with its own code
(docs/exit-codes.md), one line on stderr saying why, and ``--json`` says why too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from nodwyn.agent.settings import MAX_STEPS, STOPPED_EXIT
from nodwyn.fakes import FakeServer

from .test_run import call, configure, nodwyn


def tool_messages(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def chat_bodies(fake: FakeServer) -> list[dict[str, Any]]:
    return [r.body for r in fake.requests if r.path.endswith("/chat/completions")]


def test_a_malformed_call_and_an_unknown_tool_go_back_to_the_model_and_the_turn_goes_on(
    env: dict[str, str],
) -> None:
    broken = '{"path": "calc.py", "content": "def add(a, b):\n    """sum"""'  # never closed
    script: list[dict[str, Any]] = [
        {"calls": [{"name": "fs-write", "id": "w1", "arguments": broken}]},
        {"calls": [call("fs-teleport", "t1", to="mars")]},
        {"text": "I could not write it."},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        done = nodwyn(env, "run", "Add a docstring to calc.py.", "--yes")
        bodies = chat_bodies(fake)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "I could not write it.\n"  # the broken call was never the answer
    assert (
        Path(env["WS"]) / "calc.py"
    ).read_text() == "def add(a, b):\n    return a - b\n"  # nothing written
    first_error = tool_messages(bodies[1])[0]
    assert "fs-write: arguments are not valid JSON" in first_error
    assert '{"path": <string>, "content": <string>}' in first_error  # the shape it expects
    unknown = tool_messages(bodies[2])[1]
    assert "unknown tool 'fs-teleport', so nothing was run" in unknown and "fs-read" in unknown
    assert 'a call is {"name": TOOL, "arguments": {...}}' in unknown


def run_json(env: dict[str, str], script: list[dict[str, Any]]) -> tuple[int, dict[str, Any], str]:
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        done = nodwyn(env, "run", "Do it.", "--yes", "--json")
    return done.returncode, orjson.loads(done.stdout), done.stderr


def test_an_empty_reply_exits_17_with_one_line_and_json_says_why(env: dict[str, str]) -> None:
    code, doc, err = run_json(env, [{"text": ""}])
    assert code == STOPPED_EXIT["empty reply"] == 17
    assert doc["stopped"] == "empty reply" and doc["exit"] == 17
    assert "answered with no text and no tool calls" in doc["why"]
    lines = [line for line in err.splitlines() if "no text and no tool calls" in line]
    assert len(lines) == 1 and lines[0].startswith("nodwyn: ")


def test_the_step_limit_exits_18(env: dict[str, str]) -> None:
    script = [
        {"calls": [call("fs-read", f"r{n}", path="calc.py", lines=f"1-{n % 2 + 1}")]}
        for n in range(MAX_STEPS)
    ]
    code, doc, err = run_json(env, script)
    assert code == STOPPED_EXIT["step limit"] == 18
    assert doc["stopped"] == "step limit" and f"stopped after {MAX_STEPS} model requests" in doc["why"]
    assert sum("stopped after" in line for line in err.splitlines()) == 1


def test_a_reply_cut_at_the_output_cap_is_marked_and_exits_19(env: dict[str, str]) -> None:
    script = [{"text": "The function add is defined in calc.py and it", "finish": "length"}]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        done = nodwyn(env, "run", "Explain calc.py.")
        code, doc, _ = run_json(env, script)
    assert done.returncode == 19 == code
    out = done.stdout.splitlines()
    assert out[0] == "The function add is defined in calc.py and it"
    assert out[1].startswith("[reply cut at ") and out[1].endswith(" output tokens]")
    assert doc["stopped"] == "output cap" and doc["text"].endswith("and it")
    assert "cut at" in doc["why"] and "output cap" in done.stderr


def test_a_call_cut_at_the_output_cap_is_not_run_and_the_model_is_told(env: dict[str, str]) -> None:
    script: list[dict[str, Any]] = [
        {
            "calls": [{"name": "fs-write", "id": "w1", "arguments": '{"path": "new.py", "content": "x = 1'}],
            "finish": "length",
        },
        {"text": "Done in parts."},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        done = nodwyn(env, "run", "Write new.py.", "--yes")
        bodies = chat_bodies(fake)
    assert done.returncode == 0, done.stderr
    told = tool_messages(bodies[1])[0]
    assert "was cut at the output cap" in told and "nothing was run" in told
    assert not (Path(env["WS"]) / "new.py").exists()
