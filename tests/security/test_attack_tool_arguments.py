"""Tool arguments a hostile model sends: nested 100,000 deep, an integer of 5,000 digits, a lone
surrogate escape in plan-write's plan or a sub-agent's task. Each is a tool error result and the
session goes on; ``resume`` and ``export --format md`` of the session work; a resume that fails
records nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nodwyn.agent.tools import builtin_tools
from nodwyn.agent.tools.args import parse_arguments
from nodwyn.errors import ToolError
from nodwyn.fakes import FakeServer
from nodwyn.log import Store

pytestmark = pytest.mark.attack("tool arguments")

NODWYN = str(Path(sys.executable).parent / "nodwyn")
DEEP = '{"path": ' + "[" * 100_000 + "]" * 100_000 + "}"
HUGE = '{"seq": ' + "7" * 5_000 + "}"
HOSTILE = {
    "deep-100000": ("fs-read", DEEP),
    "integer-5000-digits": ("recall", HUGE),
    "surrogate-in-plan": ("plan-write", '{"plan": "1. read \\ud800 2. fix"}'),
    "surrogate-in-sub-agent-task": ("sub-agent", '{"task": "look at \\udcff"}'),
    "deep-in-sub-agent-tools": ("sub-agent", '{"task": "t", "tools": ' + "[" * 5000 + "]" * 5000 + "}"),
}


def _nodwyn(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [NODWYN, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _events(home: Path) -> list[dict[str, Any]]:
    (log,) = home.rglob("log.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_arguments_are_a_tool_error_and_the_session_goes_on(
    tmp_path: Path, person: Callable[..., dict[str, str]], kind: str
) -> None:
    name, text = HOSTILE[kind]
    script: list[dict[str, Any]] = [
        {"calls": [{"name": name, "id": "c1", "arguments": text}]},
        {"text": "went on"},
        {"text": "resumed"},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        env = person(tmp_path, fake.url)
        config = tmp_path / "config.toml"  # room for the 200 KB call itself (a size limit is not the attack)
        config.write_text(config.read_text().replace("context_size = 32000", "context_size = 400000"))
        ws = tmp_path / "ws"
        run = _nodwyn(env, ws, "run", "--yes", "go")
        assert run.returncode == 0, run.stderr.decode()[-2000:]
        assert b"went on" in run.stdout
        resumed = _nodwyn(env, ws, "resume", "latest", "--yes", "again")
        assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
        exported = _nodwyn(env, ws, "export", "latest", "--format", "md")
        assert exported.returncode == 0, exported.stderr.decode()[-2000:]
        assert b"went on" in exported.stdout
        sent = fake.requests[1].body["messages"]
    results = [e for e in _events(tmp_path / "home") if e["kind"] == "tool.result"]
    assert len(results) == 1 and results[0]["data"]["error"], results
    assert "\n" not in results[0]["data"]["text"]
    assert [m for m in sent if m["role"] == "tool"][0]["content"] == results[0]["data"]["text"]


def test_a_resume_that_cannot_rebuild_the_session_records_nothing(
    tmp_path: Path, person: Callable[..., dict[str, str]]
) -> None:
    with FakeServer(api="openai-chat", script=[{"text": "hi"}]) as fake:
        env = person(tmp_path, fake.url)
        ws = tmp_path / "ws"
        assert _nodwyn(env, ws, "run", "--yes", "go").returncode == 0
        store = Store(tmp_path / "home")
        sid = store.resolve("latest")
        with store.open(sid, write=True) as log:  # a tool.result the codec refuses: no rebuild
            log.append_raw("tool.result", {"name": "fs-read"})
        before = _events(tmp_path / "home")
        for _ in range(3):
            failed = _nodwyn(env, ws, "resume", "latest", "--yes", "again")
            assert failed.returncode != 0
            assert len(failed.stderr.decode().strip().splitlines()) == 1, failed.stderr
        assert _events(tmp_path / "home") == before


@pytest.mark.parametrize(
    "text",
    [
        "[" * 65 + "]" * 65,
        '{"path": "a", "x": ' + "1" * 4301 + "}",
        '{"path": "a", "x": -' + "9" * 10_000 + "}",
        '{"path": "\\udfff"}',
        '{"\\ud83d": "a"}',
        '{"path": ' + '{"a": ' * 70_000 + "1" + "}" * 70_000 + "}",
    ],
    ids=[
        "array-65",
        "int-4301",
        "negative-int-10000",
        "lone-low-surrogate",
        "surrogate-key",
        "objects-70000",
    ],
)
def test_parse_arguments_refuses_each_in_one_line(text: str) -> None:
    spec = builtin_tools()["fs-read"].spec
    with pytest.raises(ToolError) as err:
        parse_arguments(spec, text)
    assert "\n" not in str(err.value)
    str(err.value).encode("utf-8")  # the message itself is text the log can hold


def test_brackets_inside_strings_are_not_nesting() -> None:
    spec = builtin_tools()["fs-write"].spec
    content = "[" * 10_000 + "{" * 10_000
    args = parse_arguments(spec, json.dumps({"path": "a.txt", "content": content}))
    assert args["content"] == content
