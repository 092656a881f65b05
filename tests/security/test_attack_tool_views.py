"""Credentials rebuilt through the file tools: a keychain value that also sits in a workspace file
(``.env``). fs-read shows it redacted; the attack asks questions whose answers depend on it: one
reply of ~1,300 fs-grep calls (``^CORP_LLM=.{k}c``, one per position and character), fs-grep
counts, fs-edit's found / not found and its similar lines, ranged reads of a private key's lines.
Every tool matches, counts and shows on the redacted view, so no answer depends on the value."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from typing import Any

import pytest

from nodwyn.agent.tools import ToolContext, builtin_tools, run_call
from nodwyn.compose.setup import open_agent
from nodwyn.log.redact import Known
from nodwyn.testing import ScriptedBackend, isolated_env
from nodwyn.transport.credentials import write_keychain
from nodwyn.values.content import ToolCall

pytestmark = pytest.mark.attack("credentials")

VALUE = "corpLLM7Zq81Lm2Xv4Wd9"  # no known shape: only the keychain says it is a credential
# The characters the attack tries at each position: the value's own and some it lacks (the full
# alphabet of 62 makes the issue's ~1,300 calls; these keep the case within a few seconds).
ALPHABET = "".join(sorted(set(VALUE) | set("aeiouXYZ059")))
MARKER = "[redacted:credential]"
ENV_FILE = f"# settings\nDEBUG=1\nCORP_LLM={VALUE}\nREGION=eu-west-1\n"


def _pem() -> str:
    rng = random.Random(7)
    body = base64.b64encode(rng.randbytes(1200)).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----\n"


def test_the_fs_grep_oracle_rebuilds_nothing(tmp_path: Path) -> None:
    """The issue's attack through a real session: the held value comes from the keychain, the
    model's one reply asks every (position, character); what comes back is the same for all."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".env").write_text(ENV_FILE)
    env = isolated_env(tmp_path)
    write_keychain(tmp_path / "keychain.json", {"corp": {"value": VALUE, "origins": ["https://llm.corp"]}})
    calls = [
        {
            "name": "fs-grep",
            "id": f"g{k}-{c}",
            "arguments": {"pattern": f"^CORP_LLM=.{{{k}}}{c}", "path": ".env"},
        }
        for k in range(len(VALUE))
        for c in ALPHABET
    ]
    assert len(calls) > 400
    script: list[dict[str, Any]] = [{"calls": calls}, {"text": "All settings look fine."}]
    with ScriptedBackend(script) as backend:
        (tmp_path / "config.toml").write_text(
            f'[control]\nmodel = "fake"\n[models.fake]\napi = "openai-chat"\nmodel = "m"\n'
            f'base_url = "{backend.url}/v1"\ncontext_size = 400000\n'
        )
        opened = open_agent(env=env, workspace=ws, backend_for=lambda m: backend)
        try:
            opened.agent.user_turn("check my settings")
        finally:
            opened.close()
        body = json.dumps(backend.wire[-1].body)
        answers = {
            m["tool_call_id"]: m["content"] for m in backend.wire[-1].body["messages"] if m["role"] == "tool"
        }
    assert len(answers) == len(calls)
    rebuilt = "".join(
        c for k in range(len(VALUE)) for c in ALPHABET if "no match" not in answers[f"g{k}-{c}"]
    )
    # what matched is the marker the model already sees where the value was, never the value
    assert rebuilt == "".join(c for c in MARKER[: len(VALUE)] if c in ALPHABET)
    assert rebuilt != VALUE
    assert VALUE not in body


def _ctx(ws: Path) -> ToolContext:
    return ToolContext(
        workspace=ws, read_budget_tokens=10_000, approve=lambda t, w: True, known=Known.of([VALUE])
    )


def _call(ws: Path, tool: str, **args: object) -> tuple[str, bool]:
    out = run_call(ToolCall(id="c", name=tool, arguments=json.dumps(args)), builtin_tools(), _ctx(ws))
    return out.text, out.error


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / ".env").write_text(ENV_FILE)
    (tmp_path / "key.pem").write_text(_pem())
    return tmp_path


@pytest.mark.parametrize(
    "pattern",
    [VALUE, VALUE[:6], f"CORP_LLM={VALUE[0]}", f"{VALUE[-5:]}$", "CORP_LLM=[a-z]{4}LLM"],
    ids=["whole", "prefix", "first-char", "suffix", "class"],
)
def test_fs_grep_never_matches_inside_a_held_value(ws: Path, pattern: str) -> None:
    text, error = _call(ws, "fs-grep", pattern=pattern)
    assert not error and text.startswith("no match"), text


def test_fs_grep_shows_the_line_redacted(ws: Path) -> None:
    text, _ = _call(ws, "fs-grep", pattern="^CORP_LLM=")
    assert text == ".env:3: CORP_LLM=[redacted:credential]"


@pytest.mark.parametrize(
    "right",
    [VALUE[:3], VALUE[:10], VALUE[5:9] + "\nREGION"],
    ids=["prefix-3", "prefix-10", "inner-and-next-line"],
)
def test_fs_edit_answers_the_same_for_a_right_and_a_wrong_guess(ws: Path, right: str) -> None:
    wrong = "Q" * 4 + right[4:] if len(right) > 4 else "QQQ"
    answers = []
    for guess in (right, wrong):
        text, error = _call(ws, "fs-edit", path=".env", old=f"CORP_LLM={guess}", new="x")
        assert error and VALUE not in text, text
        answers.append(text.replace(guess, "GUESS"))
    assert answers[0] == answers[1]
    assert (ws / ".env").read_text() == ENV_FILE


def test_fs_edit_of_another_line_keeps_the_value_in_the_file(ws: Path) -> None:
    text, error = _call(ws, "fs-edit", path=".env", old="REGION=eu-west-1", new="REGION=us-east-2")
    assert not error, text
    assert (ws / ".env").read_text() == ENV_FILE.replace("eu-west-1", "us-east-2")


def test_fs_edit_over_the_marker_is_refused(ws: Path) -> None:
    text, error = _call(ws, "fs-edit", path=".env", old="CORP_LLM=[redacted:credential]", new="CORP_LLM=x")
    assert error and "redacted value" in text, text
    assert (ws / ".env").read_text() == ENV_FILE


@pytest.mark.parametrize("lines", ["2-2", "5-6", "1-", "3"])
def test_a_ranged_read_of_a_private_keys_lines_shows_no_line_of_it(ws: Path, lines: str) -> None:
    key_lines = set(_pem().splitlines()[1:-1])
    text, error = _call(ws, "fs-read", path="key.pem", lines=lines)
    shown = set(text.splitlines())
    assert not (shown & key_lines), text[:200]


def test_a_whole_read_shows_the_view(ws: Path) -> None:
    text, _ = _call(ws, "fs-read", path=".env")
    assert VALUE not in text and "CORP_LLM=[redacted:credential]" in text
