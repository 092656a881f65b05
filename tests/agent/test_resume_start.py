"""The log's index keeps the start tracker's point, and a resumed session holds the events from
its start: resume reads the log from the start point its last
request recorded, found through the index, not from seq 1; what it then sends is what a resume that
read everything sends. (The cost, on a log with a gigabyte before its start: bench/resume_start.py.)"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from nodwyn.agent import strategies
from nodwyn.compose.setup import open_agent
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.replay.exact import replay_request


def _env(tmp_path: Path, url: str, home: str) -> dict[str, str]:
    config = tmp_path / "config.toml"
    config.write_text(
        f'[control]\nmodel = "m"\n\n[models.m]\napi = "openai-chat"\nmodel = "fake-model"\n'
        f'base_url = "{url}"\ncontext_size = 32000\n'
    )
    return {"NODWYN_HOME": str(tmp_path / home), "NODWYN_CONFIG": str(config), "HOME": str(tmp_path)}


def _read(cid: str, path: str) -> dict[str, Any]:
    return {"calls": [{"name": "fs-read", "id": cid, "arguments": {"path": path}}]}


def _damage(log_file: Path, seq: int) -> None:
    """Overwrite the line of ``seq`` (all but its seq prefix and newline) with bytes that are not
    JSON, in place: the index still finds every other line where it was."""
    raw = bytearray(log_file.read_bytes())
    lines = raw.split(b"\n")
    start = sum(len(line) + 1 for line in lines[: seq - 1])
    prefix = len(f'{{"seq":{seq},'.encode())
    end = start + len(lines[seq - 1])
    raw[start + prefix : end] = b"x" * (end - start - prefix)
    log_file.write_bytes(bytes(raw))


def test_resume_reads_from_the_recorded_start_point_not_from_seq_1(tmp_path: Path, workspace: Path) -> None:
    script = [
        _read("r1", "calc.py"),
        {"text": "add subtracts."},
        {"text": "Note: add in calc.py subtracts; fix it to add."},  # compaction's note
        _read("r2", "README.txt"),
        {"text": "It is a calculator."},
        {"text": "After the resume."},
    ]
    with FakeServer(api="openai-chat", script=script + script[-1:]) as fake:
        env = _env(tmp_path, fake.url, "home")
        opened = open_agent(env=env, workspace=workspace)
        try:
            agent = opened.agent
            agent.user_turn("What does add do?")
            strategies.compact(agent)
            agent.user_turn("What is this repository?")
            sid = agent.session_id
        finally:
            opened.close()
        home = tmp_path / "home"
        with Store(home).open(sid) as log:
            events = list(log.read(1))
        recorded = [e for e in events if e.kind == "llm.req"][-1].data["start"]
        start, keep = recorded["seq"], tuple(recorded["keep"])
        assert start > 1 and keep  # the compaction's narrowing cut the conversation
        first_result = next(e.seq for e in events if e.kind == "tool.result")
        assert first_result < start
        # a copy read whole, as resume once read it, decides what must be sent
        shutil.copytree(home, tmp_path / "copy")
        _damage(home / "sessions" / sid / "log.jsonl", first_result)

        for root in ("home", "copy"):
            opened = open_agent(env=_env(tmp_path, fake.url, root), workspace=workspace, resume=sid)
            try:
                assert opened.agent.first_seq == start
                assert opened.agent.user_turn("Anything else?").text == "After the resume."
            finally:
                opened.close()
        damaged_body, whole_body = fake.requests[-2].body, fake.requests[-1].body

    assert damaged_body == whole_body
    with Store(tmp_path / "copy").open(sid) as log:
        last = [e for e in log.read(1) if e.kind == "llm.req"][-1]
        assert replay_request(log, last.seq, whole=True).digest == last.data["digest"]
    with Store(home).open(sid) as log:
        last = [e for e in log.read(start) if e.kind == "llm.req"][-1]
        assert last.data["start"] == {"seq": start, "keep": list(keep)}
        assert replay_request(log, last.seq).digest == last.data["digest"]
