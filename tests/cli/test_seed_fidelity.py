"""Issue 20, items 1, 3, 4 and 5, as a person meets them: the real command in a subprocess against
fake providers on 127.0.0.1 (ADR 0300). Every session the commands record replays to its recorded
digests (the ``env`` fixture checks it on teardown)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.values.events import Event

from .test_run import call, nodwyn


def _config(env: dict[str, str], body: str) -> None:
    Path(env["NODWYN_CONFIG"]).write_text(body)


def _events(env: dict[str, str], sid: str) -> list[Event]:
    with Store(Path(env["NODWYN_HOME"])).open(sid) as log:
        return list(log.read(1))


def _only_session(env: dict[str, str]) -> str:
    [sid] = Store(Path(env["NODWYN_HOME"])).ids()
    return sid


def _bodies(fake: FakeServer) -> list[dict[str, Any]]:
    return [r.body for r in fake.requests if r.path.endswith("/chat/completions")]


# -- item 1: a session recorded before window-v16 resumes on v16 ------------------------------------


def _cerebras(env: dict[str, str], url: str) -> None:
    _config(
        env,
        f"""[control]
model = "qwen"

[window]
high_water = 3000
low_water = 1500

[models.qwen]
api = "openai-chat"
family = "cerebras"
model = "qwen-3.8-27b"
base_url = "{url}"
context_size = 32000
""",
    )


def test_a_v15_session_whose_trim_orphaned_results_resumes_on_v16_and_cerebras_accepts_it(
    env: dict[str, str],
) -> None:
    ws = Path(env["WS"])
    for k in range(10):
        (ws / f"f{k}").write_text("".join(f"file {k} line {i}\n" for i in range(30)))
    # v15: a trim elides old assistant batches and keeps their results; the strict server refuses
    script = [
        {"text": f"{'reading on ' * 60}{k}", "calls": [call("fs-read", f"c{k}", path=f"f{k}")]}
        for k in range(10)
    ] + [{"text": "read them all"}]
    with FakeServer(api="openai-chat", family="cerebras", script=script) as fake:
        _cerebras(env, fake.url)
        first = nodwyn(env, "run", "Read f0 to f9.", "--yes", "--recipe", "window-v15")
    assert first.returncode == 12, first.stderr
    assert "must be a response to a preceeding message with 'tool_calls'" in first.stderr
    sid = _only_session(env)
    log = _events(env, sid)
    elided = {s for e in log if e.kind == "llm.req" for s in e.data.get("elided", ())}
    replies = {e.seq for e in log if e.kind == "llm.resp" and e.data["response"]["calls"]}
    assert elided & replies  # v15 elided replies with calls, and kept their results

    # resumed without --recipe: it records v16 and leaves the orphaned results out of the next request
    with FakeServer(api="openai-chat", family="cerebras", script=[{"text": "Resumed."}]) as fake:
        _cerebras(env, fake.url)
        again = nodwyn(env, "resume", sid, "Go on.", "--yes")
        [body] = _bodies(fake)
    assert again.returncode == 0, again.stderr
    assert again.stdout == "Resumed.\n"
    assert "window-v16" in again.stderr
    log = _events(env, sid)
    assert [e.data["recipe"]["version"] for e in log if e.kind.startswith("session.")] == [
        "window-v15",
        "window-v16",
    ]
    sent_calls = {c["id"] for m in body["messages"] for c in m.get("tool_calls") or []}
    sent_results = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
    assert sent_results and set(sent_results) <= sent_calls
    orphans = {e.seq for e in log if e.kind == "tool.result" and e.data["call_id"] not in sent_calls}
    sticky = {s for e in log if e.kind == "llm.req" for s in e.data.get("elided", ())}
    assert orphans and orphans <= sticky  # the left-out results are in the sticky elided set


def test_a_v16_session_keeps_its_own_version_on_resume(env: dict[str, str]) -> None:
    """ADR 0151 stands from v16 on: a resume keeps the session's version unless asked."""
    with FakeServer(api="openai-chat", family="cerebras", script=[{"text": "a"}, {"text": "b"}]) as fake:
        _cerebras(env, fake.url)
        assert nodwyn(env, "run", "One.", "--recipe", "window-v17").returncode == 0
        sid = _only_session(env)
        assert nodwyn(env, "resume", sid, "Two.").returncode == 0
    log = _events(env, sid)
    versions = [e.data["recipe"]["version"] for e in log if e.kind.startswith("session.")]
    assert versions == ["window-v17", "window-v17"]


# -- item 3: a superseded summary never comes back ---------------------------------------------------


def _plain(env: dict[str, str], url: str, context: int = 32000) -> None:
    _config(
        env,
        f"""[control]
model = "chat"

[models.chat]
api = "openai-chat"
model = "fake-model"
base_url = "{url}"
context_size = {context}
""",
    )


def test_revoking_the_newer_of_two_overlapping_summaries_shows_the_source_not_the_older(
    env: dict[str, str], tmp_path: Path
) -> None:
    with FakeServer(api="openai-chat", script=[{"text": f"answer {k}"} for k in range(5)]) as fake:
        _plain(env, fake.url)
        chat = nodwyn(env, "chat", stdin="".join(f"question {k}\n" for k in range(5)) + "/quit\n")
    assert chat.returncode == 0, chat.stderr
    sid = _only_session(env)
    users = [e.seq for e in _events(env, sid) if e.kind == "user.msg"]
    older, newer = tmp_path / "older.md", tmp_path / "newer.md"
    older.write_text("OLDER SUMMARY of the first turn")
    newer.write_text("NEWER SUMMARY of the first two turns")
    home = ["--root", env["NODWYN_HOME"]]

    def add(first: int, last: int, text: Path) -> str:
        done = nodwyn(env, "summary", "add", sid, "--from", str(first), "--to", str(last), str(text), *home)
        assert done.returncode == 0, done.stderr
        return done.stdout

    add(users[0], users[1] - 1, older)
    added = add(users[0], users[2] - 1, newer)
    newer_seq = int(added.split()[2])
    assert nodwyn(env, "summary", "revoke", sid, str(newer_seq), *home).returncode == 0
    listed = nodwyn(env, "summary", "list", sid, "--json", *home)
    status = {row["seq"]: row["status"] for row in map(orjson.loads, listed.stdout.splitlines())}
    assert sorted(status.values()) == ["revoked", "superseded"]

    with FakeServer(api="openai-chat", script=[{"text": "resumed"}]) as fake:
        _plain(env, fake.url)
        done = nodwyn(env, "resume", sid, "question 5")
        [body] = _bodies(fake)
    assert done.returncode == 0, done.stderr
    wire = orjson.dumps(body["messages"]).decode()
    assert "OLDER SUMMARY" not in wire and "NEWER SUMMARY" not in wire
    assert "question 0" in wire  # the span's source shows again


# -- item 4: a switch to a model with a smaller context resizes the window ---------------------------


def test_a_switch_to_a_smaller_context_resizes_the_window_and_the_reply_cap(env: dict[str, str]) -> None:
    ws = Path(env["WS"])
    for k in range(4):
        (ws / f"f{k}").write_text("".join(f"file {k} line {i} {'x' * 60}\n" for i in range(120)))
    script: list[dict[str, Any]] = [{"calls": [call("fs-read", f"c{k}", path=f"f{k}")]} for k in range(4)] + [
        {"text": "read"},
        {"text": "small answers"},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        _config(
            env,
            f"""[control]
model = "big"

[models.big]
api = "openai-chat"
model = "big-model"
base_url = "{fake.url}"
context_size = 1048576

[models.small]
api = "openai-chat"
model = "small-model"
base_url = "{fake.url}"
context_size = 8192
""",
        )
        chat = nodwyn(env, "chat", "--yes", stdin="Read f0 to f3.\n/model small\nAnd now?\n/quit\n")
        bodies = _bodies(fake)
    assert chat.returncode == 0, chat.stderr
    assert "[model small]" in chat.stderr
    sid = _only_session(env)
    log = _events(env, sid)
    [switch] = [e for e in log if e.kind == "model.switch"]
    limits = switch.data["recipe"]["limits"]
    assert switch.data["recipe"]["context_size"] == 8192
    assert limits["high_water"] + limits["output_reserve"] <= 8192 and limits["output_reserve"] < 8192
    big = [e for e in log if e.kind == "llm.req" and e.seq < switch.seq]
    small = [e for e in log if e.kind == "llm.req" and e.seq > switch.seq]
    assert big[-1].data["estimate"] > 8192  # what the big model's window held
    for req in small:
        assert req.data["estimate"] + req.data["max_output"] <= 8192
        assert req.data["max_output"] == limits["output_reserve"]
    assert bodies[-1]["model"] == "small-model"
    assert bodies[-1]["max_completion_tokens"] == limits["output_reserve"]


# -- item 5: what does not fit is refused before it is recorded or sent -------------------------------


def test_piped_input_larger_than_the_window_is_refused_before_the_session_is_written(
    env: dict[str, str],
) -> None:
    big = "".join(f"line {i}: {'lorem ipsum ' * 8}\n" for i in range(20_000))  # ~2 MB
    with FakeServer(api="openai-chat", script=[{"text": "never"}]) as fake:
        _plain(env, fake.url, context=32768)
        done = nodwyn(env, "run", "summarise", stdin=big)
        sent = _bodies(fake)
    assert done.returncode == 20, done.stderr  # TooLargeError
    assert done.stderr.count("\n") == 1, done.stderr
    size = re.search(
        r"the task is about ([\d,]+) tokens \(([\d,]+) bytes with what was piped in\)", done.stderr
    )
    assert size and int(size.group(2).replace(",", "")) > len(big) > int(size.group(1).replace(",", ""))
    assert "name its path in the task" in done.stderr
    assert sent == []
    assert Store(Path(env["NODWYN_HOME"])).ids() == []


def test_a_request_larger_than_the_context_is_never_sent(env: dict[str, str]) -> None:
    """Two messages that each fit the window but not together the context: the second request
    is refused before it is recorded, and the chat goes on."""
    part = "word " * 4500  # about 7,500 tokens each: under the high water (10,240) of a 16,384 context
    with FakeServer(api="openai-chat", script=[{"text": "first"}]) as fake:
        _plain(env, fake.url, context=16384)
        chat = nodwyn(env, "chat", stdin=f"{part}one\n{part}two\n/quit\n")
        sent = _bodies(fake)
    assert chat.returncode == 0, chat.stderr
    assert len(sent) == 1
    assert "more than its 16,384-token context" in chat.stderr and "nothing was sent" in chat.stderr
    sid = _only_session(env)
    log = _events(env, sid)
    assert [e.kind for e in log].count("llm.req") == 1
    assert log[-1].kind == "note" and "refused before sending" in log[-1].data["text"]


@pytest.mark.slow
def test_piped_input_too_large_for_the_local_model_is_refused_before_it_loads(env: dict[str, str]) -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("the local extra is not installed")
    _config(env, "")  # the built-in entries alone
    big = "x" * 400_000
    done = nodwyn(env, "run", "-m", "local", "summarise", stdin=big, timeout=60)
    assert done.returncode == 20, done.stderr
    assert "the task is about" in done.stderr and "model 'local'" in done.stderr
    assert Store(Path(env["NODWYN_HOME"])).ids() == []


def test_a_switch_to_a_context_too_small_for_the_window_is_refused_in_one_line(env: dict[str, str]) -> None:
    with FakeServer(api="openai-chat", script=[{"text": "still big"}]) as fake:
        _config(
            env,
            f"""[control]
model = "big"

[window]
output_reserve = 2048

[models.big]
api = "openai-chat"
model = "big-model"
base_url = "{fake.url}"
context_size = 1048576

[models.tiny]
api = "openai-chat"
model = "tiny-model"
base_url = "{fake.url}"
context_size = 4096
""",
        )
        chat = nodwyn(env, "chat", stdin="/model tiny\nHello.\n/quit\n")
        bodies = _bodies(fake)
    assert chat.returncode == 0, chat.stderr
    [line] = [s for s in chat.stderr.splitlines() if "tiny" in s]
    assert "output_reserve = 2048 leaves too little of model 'tiny''s 4096-token context" in line
    assert "model.switch" not in {e.kind for e in _events(env, _only_session(env))}
    assert [b["model"] for b in bodies] == ["big-model"]
