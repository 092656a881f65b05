"""Credentials: no configured credential value appears
anywhere in a session's log, attachments, terminal output or a later request, whatever the model or
a tool prints, and a provider error that echoes the key is redacted before it is shown or logged.

The real ``nodwyn`` command runs against a fake provider on 127.0.0.1. The configured values have
no known shape (an environment variable a model entry names, and a keychain entry's value). The
model echoes them in its reply and in the commands it runs; a tool prints them (a file holding
them, ``printf``, ``env``); the provider's 401 echoes one. Then the whole session folder, every
byte the command wrote to stdout and stderr, and every request body the fake received are searched.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nodwyn.fakes import FakeServer
from nodwyn.transport.credentials import write_keychain

Person = Callable[..., dict[str, str]]  # the `person` fixture (conftest.py)

pytestmark = pytest.mark.attack("credentials")

NODWYN = str(Path(sys.executable).parent / "nodwyn")
ENV_VALUE = "corp-llm-cred-Zq81Lm2Xv"  # CORP_LLM, named by the model entry: no known shape
VAULT_VALUE = "vault-entry-P4r7Kd9Qs3W"  # the keychain's value: no known shape either
VALUES = (ENV_VALUE, VAULT_VALUE)


def call(name: str, arguments: dict[str, Any], cid: str) -> dict[str, Any]:
    return {"name": name, "id": cid, "arguments": arguments}


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory, person: Person) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("creds")
    echo = f"your keys: {ENV_VALUE} and {VAULT_VALUE}"
    script: list[dict[str, Any]] = [
        {
            "text": echo + "\n",
            "calls": [
                call("fs-read", {"path": "notes.txt"}, "c1"),
                call("shell", {"command": f"printf '%s\\n' {ENV_VALUE} {VAULT_VALUE}; env"}, "c2"),
                call("fs-write", {"path": "copy.txt", "content": echo}, "c3"),
            ],
        },
        {"text": f"done; once more: {ENV_VALUE}\nand {VAULT_VALUE}"},  # the answer, streamed
        {"error": {"status": 401, "message": f"Incorrect API key provided: {ENV_VALUE} ({VAULT_VALUE})"}},
        {"text": "ok"},  # a later request carries the whole conversation
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        env = person(tmp, fake.url, credential=("CORP_LLM", ENV_VALUE))
        (tmp / "ws" / "notes.txt").write_text(f"deploy with {ENV_VALUE}\nbackup {VAULT_VALUE}\n")
        vault = {"vault": {"value": VAULT_VALUE, "origins": ["https://example.com"]}}
        write_keychain(tmp / "keychain.json", vault)
        runs = []
        for args in (
            ["run", "--yes", f"print {ENV_VALUE}"],
            ["resume", "latest", "--yes", "again"],
            ["resume", "latest", "--yes", "once more"],
        ):
            runs.append(
                subprocess.run(
                    [NODWYN, *args],
                    env=env,
                    cwd=tmp / "ws",
                    capture_output=True,
                    timeout=120,
                    check=False,
                    stdin=subprocess.DEVNULL,
                )
            )
        bodies = [json.dumps(r.body) for r in fake.requests]
    assert not fake.remaining
    yield {"tmp": tmp, "runs": runs, "bodies": bodies}


def test_the_sessions_ran_and_the_provider_refused_once(session: dict[str, Any]) -> None:
    codes = [r.returncode for r in session["runs"]]
    assert codes[0] == 0 and codes[2] == 0, [r.stderr for r in session["runs"]]
    assert codes[1] != 0  # the 401
    assert b"401" in session["runs"][1].stderr and b"[redacted:credential]" in session["runs"][1].stderr
    assert len(session["bodies"]) == 4


@pytest.mark.parametrize("value", VALUES, ids=["env-var-named-by-model", "keychain-value"])
def test_no_value_in_any_file_of_the_session(session: dict[str, Any], value: str) -> None:
    folders = list((session["tmp"] / "home").rglob("log.jsonl"))
    assert len(folders) == 1
    files = [p for p in folders[0].parent.rglob("*") if p.is_file()]
    assert any(p.parent.name == "attachments" for p in files) or True  # attachments, if any, included
    for p in files:
        assert value.encode() not in p.read_bytes(), p
    assert b"[redacted:credential]" in folders[0].read_bytes()


@pytest.mark.parametrize("value", VALUES, ids=["env-var-named-by-model", "keychain-value"])
def test_no_value_on_stdout_or_stderr(session: dict[str, Any], value: str) -> None:
    for run in session["runs"]:
        assert value.encode() not in run.stdout
        assert value.encode() not in run.stderr


@pytest.mark.parametrize("value", VALUES, ids=["env-var-named-by-model", "keychain-value"])
def test_no_value_in_a_request_body(session: dict[str, Any], value: str) -> None:
    for n, body in enumerate(session["bodies"]):
        assert value not in body, f"request {n + 1}"


def test_what_the_tools_wrote_to_the_workspace_is_the_persons_own(session: dict[str, Any]) -> None:
    # the redaction is of what nodwyn logs, shows and sends; the files are the person's
    ws = session["tmp"] / "ws"
    assert ENV_VALUE in (ws / "notes.txt").read_text()


def test_an_attachment_holding_a_value_is_refused(tmp_path: Path) -> None:
    from nodwyn.errors import NodwynError
    from nodwyn.log import Store
    from nodwyn.log.redact import Known

    with Store(tmp_path, fsync=False, known=Known.of(VALUES)).create() as log:
        with pytest.raises(NodwynError, match="holds the value of a credential"):
            log.attachments.put(b"\x89PNG...." + VAULT_VALUE.encode() + b"....")
        assert not any((log.path / "attachments").glob("*")) if (log.path / "attachments").exists() else True
