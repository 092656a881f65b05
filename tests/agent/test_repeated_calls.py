"""A small model's loop: the same look with the same arguments, right after its answer. The second
is answered without running the tool again, and says where the answer is; a call that changes
something, or a look with other arguments, runs as always."""

from pathlib import Path
from typing import Any

from nodwyn.compose.setup import open_agent
from nodwyn.fakes import FakeServer


def call(name: str, cid: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "id": cid, "arguments": arguments}


def test_an_identical_repeated_look_is_not_run_again(tmp_path: Path, workspace: Path) -> None:
    script: list[dict[str, Any]] = [
        {"calls": [call("fs-read", "r1", path="calc.py")]},
        {"calls": [call("fs-read", "r2", path="calc.py")]},  # the loop
        {"calls": [call("fs-read", "r3", path="README.txt")]},  # other arguments: runs
        {"calls": [call("fs-write", "w1", path="n.txt", content="x")]},
        {"calls": [call("fs-write", "w2", path="n.txt", content="x")]},  # changes things: runs
        {"text": "add subtracts."},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        config = tmp_path / "config.toml"
        config.write_text(
            f'[control]\nmodel = "chat"\n[models.chat]\napi = "openai-chat"\nmodel = "m"\n'
            f'base_url = "{fake.url}"\ncontext_size = 32000\n'
        )
        env = {"NODWYN_HOME": str(tmp_path / "home"), "NODWYN_CONFIG": str(config), "HOME": str(tmp_path)}
        opened = open_agent(env=env, workspace=workspace, yes=True)
        try:
            result = opened.agent.user_turn("What does add do?")
            results = [e.data for e in opened.agent.log.read(1) if e.kind == "tool.result"]
        finally:
            opened.close()
    assert result.text == "add subtracts."
    assert [(r["call_id"], r["error"]) for r in results] == [
        ("r1", False),
        ("r2", True),
        ("r3", False),
        ("w1", False),
        ("w2", False),
    ]
    assert results[1]["text"] == (
        "fs-read was just called with these same arguments and its result is above; "
        "answer from it, or make a different call"
    )
    assert "return a - b" in results[0]["text"] and "A calculator." in results[2]["text"]
