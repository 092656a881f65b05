"""The shell tool under attack: the environment it gets holds no
credential, its output is capped while it runs, and nothing it starts outlives its tool call
(timeout, flood, Ctrl-C) or its session. Sessions are the real ``nodwyn`` command against a fake
provider on 127.0.0.1; what the provider received is checked on the wire."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nodwyn.agent.sandbox import Sandbox
from nodwyn.agent.tools import ToolContext, builtin_tools, run_call
from nodwyn.agent.tools.env import scrub_env
from nodwyn.agent.tools.procs import ProcessGroups
from nodwyn.agent.tools.shell import MAX_OUTPUT
from nodwyn.fakes import FakeServer
from nodwyn.testing import isolated_env
from nodwyn.transport.credentials import write_keychain
from nodwyn.values.content import ToolCall

pytestmark = pytest.mark.attack("shell")

NODWYN = str(Path(sys.executable).parent / "nodwyn")

# name -> value; each must be absent from the shell's environment, the log and the wire
SECRETS = {
    "OPENAI_API_KEY": "plainvalue-openai-0001",
    "ANTHROPIC_API_KEY": "plainvalue-anthropic-0002",
    "GITHUB_TOKEN": "plainvalue-github-0003",
    "AWS_SECRET_ACCESS_KEY": "plainvalue-aws-0004",
    "AWS_SESSION_TOKEN": "plainvalue-awssession-0005",
    "PGPASSWORD": "plainvalue-pg-0006",
    "DATABASE_URL": "postgres://app:plainvalue-db-0007@db.example.com/app",
    "SLACK_WEBHOOK_URL": "https://hooks.example.com/plainvalue-slack-0008",
    "HF_TOKEN": "plainvalue-hf-0009",
    "CORP_LLM": "plainvalue-modelentry-0010",  # named as a credential by a model entry only
    "corpvault": "plainvalue-keychainname-0011",  # named by the keychain only
    "INNOCENT_LOOKING": "kc-plainvalue-keychainvalue-0012",  # holds the keychain's value
    "TOOL_CONFIG": "sk-ant-api03-" + "Q" * 40 + "0013",  # a known credential shape
}
ALLOWED = {"NPM_TOKEN": "plainvalue-allowed-by-name"}  # [tools] shell_env lets it through


def shell_call(command: str, cid: str = "s1") -> dict[str, Any]:
    return {"name": "shell", "id": cid, "arguments": {"command": command}}


def person_env(tmp: Path, url: str, extra: str = "") -> dict[str, str]:
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    cfg = tmp / "cfg" / "nodwyn"
    cfg.mkdir(parents=True, exist_ok=True)
    (tmp / "config.toml").write_text(
        f"""[control]
model = "chat"
[tools]
shell_timeout = 20
shell_env = ["NPM_TOKEN"]
{extra}
[models.chat]
api = "openai-chat"
model = "fake-model"
base_url = "{url}"
credential = "CORP_LLM"
context_size = 32000
"""
    )
    write_keychain(
        tmp / "keychain.json",  # beside config.toml, where NODWYN_CONFIG puts it
        {"corpvault": {"value": "kc-plainvalue-keychainvalue-0012", "origins": ["https://example.com"]}},
    )
    return isolated_env(tmp, PATH=os.environ.get("PATH", ""), **SECRETS, **ALLOWED)


@pytest.fixture(scope="module")
def env_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """One session whose model runs `env`: (tool output, log bytes, what went back on the wire)."""
    tmp = tmp_path_factory.mktemp("envscrub")
    script: list[dict[str, Any]] = [{"calls": [shell_call("env; echo end-of-env")]}, {"text": "done"}]
    with FakeServer(api="openai-chat", script=script) as fake:
        env = person_env(tmp, fake.url)
        done = subprocess.run(
            [NODWYN, "run", "--yes", "show the environment"],
            env=env,
            stdin=subprocess.DEVNULL,
            cwd=tmp / "ws",
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        wire = json.dumps(fake.requests[-1].body)
    logs = list((tmp / "home").rglob("log.jsonl"))
    log_text = logs[0].read_text()
    result = [json.loads(line) for line in log_text.splitlines() if '"tool.result"' in line]
    yield result[0]["data"]["text"], log_text, wire


@pytest.mark.needs("bwrap")
@pytest.mark.parametrize("name", sorted(SECRETS))
def test_the_shell_environment_holds_no_credential(env_session: tuple[str, str, str], name: str) -> None:
    output, log_text, wire = env_session
    assert "end-of-env" in output and "HOME=" in output  # the command ran, with an environment
    assert f"{name}=" not in output
    value = SECRETS[name]
    assert value not in output and value not in log_text and value not in wire


@pytest.mark.needs("bwrap")
def test_a_variable_allowed_by_name_is_kept(env_session: tuple[str, str, str]) -> None:
    output, log_text, wire = env_session
    # the shell had it (allowed by name); its value is still a secret-named assignment, which the
    # log's redaction replaces, so neither the log nor the provider gets it
    assert "NPM_TOKEN=[redacted:password]" in output
    assert "plainvalue-allowed-by-name" not in log_text and "plainvalue-allowed-by-name" not in wire


# -- output cap and process groups, in process ------------------------------------------------


def ctx(
    ws: Path, timeout: float = 20.0, groups: ProcessGroups | None = None, sandbox: Sandbox | None = None
) -> ToolContext:
    return ToolContext(
        workspace=ws,
        read_budget_tokens=1000,
        approve=lambda t, w: True,
        shell_timeout=timeout,
        processes=groups or ProcessGroups(),
        sandbox=sandbox or Sandbox(),
    )


def run_shell(c: ToolContext, command: str) -> tuple[str, bool]:
    args = json.dumps({"command": command})
    out = run_call(ToolCall(id="c", name="shell", arguments=args), builtin_tools(), c)
    return out.text, out.error


def running(marker: str) -> list[int]:
    """The processes whose command line holds ``marker`` (a pid written inside the sandbox names
    a process of its own PID namespace, nothing here, so processes are found by what they run)."""
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False)
    return [int(p) for p in found.stdout.split() if int(p) != os.getpid()]


def wait_gone(marker: str, seconds: float = 10) -> list[int]:
    end = time.monotonic() + seconds
    while time.monotonic() < end and running(marker):
        time.sleep(0.05)
    return running(marker)


MODES = [pytest.param(Sandbox(), id="sandboxed"), pytest.param(Sandbox(mode="off"), id="unsandboxed")]


@pytest.mark.needs("bwrap")
def test_a_flood_of_output_is_capped_while_it_runs(tmp_path: Path) -> None:
    """Defect 10: `yes` wrote 2.8 GB to /tmp in 4 s; now nothing goes to disk and it is stopped."""
    started = time.monotonic()
    text, err = run_shell(ctx(tmp_path, timeout=60), "yes")
    took = time.monotonic() - started
    assert err and "more than 64 MiB of output" in text, text[-300:]
    assert took < 20, f"`yes` ran {took:.1f} s"
    assert len(text) < MAX_OUTPUT + 300


def test_a_backgrounded_flood_is_stopped_too(tmp_path: Path) -> None:
    groups = ProcessGroups()
    text, err = run_shell(ctx(tmp_path, groups=groups), "(yes > /dev/stdout &) ; echo started")
    assert len(text) < MAX_OUTPUT + 300
    end = time.monotonic() + 20
    while groups.running() and time.monotonic() < end:
        time.sleep(0.1)
    assert not groups.running(), "a background `yes` was still running"


@pytest.mark.needs("bwrap")
@pytest.mark.parametrize("box", MODES)
def test_a_timeout_kills_the_whole_group(tmp_path: Path, box: Sandbox) -> None:
    text, err = run_shell(ctx(tmp_path, timeout=1, sandbox=box), "sleep 300.101 & sleep 300.102; wait")
    assert err and "timed out after 1 s" in text
    assert wait_gone("300.10") == []


@pytest.mark.needs("bwrap")
def test_what_a_command_backgrounds_ends_with_the_session(tmp_path: Path) -> None:
    """Unsandboxed, a background child may serve the session until it ends; sandboxed it ends
    with its call (the PID namespace)."""
    groups = ProcessGroups()
    command = "sleep 300.201 >/dev/null 2>&1 & echo started"
    text, err = run_shell(ctx(tmp_path, groups=groups, sandbox=Sandbox(mode="off")), command)
    assert not err, text
    assert running("300.201") and groups.running()  # it may serve the session meanwhile
    groups.kill_all()
    assert wait_gone("300.201") == []
    text, err = run_shell(ctx(tmp_path, groups=groups), command)
    assert not err and "started" in text
    assert wait_gone("300.201", 2) == []


def _session_with_a_backgrounded_child(
    tmp_path: Path, sig: signal.Signals | None, command: str, box: Sandbox, marker: str
) -> list[int]:
    """Run `nodwyn run` whose model runs ``command`` (which writes started once it runs), send
    ``sig`` then (or let it finish), and return the processes holding ``marker`` still running."""
    script: list[dict[str, Any]] = [{"calls": [shell_call(command)]}, {"text": "done"}]
    with FakeServer(api="openai-chat", script=script) as fake:
        env = person_env(tmp_path, fake.url, f'sandbox = "{box.mode}"')
        ws = tmp_path / "ws"
        with subprocess.Popen(
            [NODWYN, "run", "--yes", "--dangerously-no-sandbox", "start a server"],
            env=env,
            cwd=ws,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        ) as proc:
            try:
                end = time.monotonic() + 60
                while not (ws / "started").exists() and time.monotonic() < end:
                    time.sleep(0.05)
                time.sleep(0.2)
                assert running(marker), "the command did not start"
                if sig is not None:
                    proc.send_signal(sig)
                proc.wait(30)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    return wait_gone(marker)


@pytest.mark.needs("bwrap")
@pytest.mark.parametrize("box", MODES)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_interrupting_a_session_mid_tool_leaves_no_process(
    tmp_path: Path, sig: signal.Signals, box: Sandbox
) -> None:
    """Defect 11: Ctrl-C during a tool left the shell and what it backgrounded running."""
    command = "sleep 300.301 >/dev/null 2>&1 & touch started; sleep 300.302"
    assert _session_with_a_backgrounded_child(tmp_path, sig, command, box, "300.30") == []


@pytest.mark.needs("bwrap")
@pytest.mark.parametrize("box", MODES)
def test_the_end_of_a_session_leaves_no_process(tmp_path: Path, box: Sandbox) -> None:
    command = "sleep 300.401 >/dev/null 2>&1 & touch started; sleep 1"
    assert _session_with_a_backgrounded_child(tmp_path, None, command, box, "300.40") == []


@pytest.mark.needs("bwrap")
def test_ctrl_c_in_chat_kills_the_command_and_the_chat_goes_on(tmp_path: Path) -> None:
    """Ctrl-C in `chat` while a command runs: the command's group is gone at once (not only at the
    end of the session), and the chat takes the next message."""
    command = "sleep 300.501 >/dev/null 2>&1 & touch started; sleep 300.502"
    script: list[dict[str, Any]] = [{"calls": [shell_call(command)]}, {"text": "next answer"}]
    with FakeServer(api="openai-chat", script=script) as fake:
        env = person_env(tmp_path, fake.url)
        ws = tmp_path / "ws"
        with subprocess.Popen(
            [NODWYN, "chat", "--yes"],
            env=env,
            cwd=ws,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as proc:
            try:
                assert proc.stdin is not None
                proc.stdin.write("start a server\n")
                proc.stdin.flush()
                end = time.monotonic() + 60
                while not (ws / "started").exists() and time.monotonic() < end:
                    time.sleep(0.05)
                time.sleep(0.2)
                assert running("300.50"), "the command did not start"
                proc.send_signal(signal.SIGINT)
                assert wait_gone("300.50") == [], "the command outlived Ctrl-C"
                assert proc.poll() is None  # the chat is still there
                out, err = proc.communicate("what now?\n/quit\n", timeout=90)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    assert "interrupted" in err and "next answer" in out


COMMON_SECRET_NAMES = [
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "XAI_API_KEY",
    "DEEPSEEK_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GH_TOKEN",
    "GITLAB_TOKEN",
    "NPM_TOKEN",
    "PYPI_TOKEN",
    "TWINE_PASSWORD",
    "DOCKER_PASSWORD",
    "SLACK_BOT_TOKEN",
    "STRIPE_SECRET_KEY",
    "SENTRY_AUTH_TOKEN",
    "SENTRY_DSN",
    "DATABASE_URL",
    "REDIS_PASSWORD",
    "MYSQL_PWD_HASH",
    "JWT_SECRET",
    "SECRET_KEY_BASE",
    "DJANGO_SECRET_KEY",
    "GPG_PASSPHRASE",
    "SSH_PRIVATE_KEY",
    "CLOUDFLARE_API_TOKEN",
    "VAULT_TOKEN",
    "COOKIE_SECRET",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "my_service_apikey",
]
BENIGN = ["PATH", "HOME", "LANG", "TERM", "PWD", "SSH_AUTH_SOCK", "EDITOR", "SHELL", "TOKENIZERS_PARALLELISM"]


@pytest.mark.parametrize("name", COMMON_SECRET_NAMES)
def test_a_secret_looking_name_is_left_out(name: str) -> None:
    kept = scrub_env({name: "value-of-no-known-shape", "PATH": "/usr/bin"})
    assert kept == {"PATH": "/usr/bin"}
    assert scrub_env({name: "v"}, allow=[name]) == {name: "v"}  # unless allowed by name


def test_ordinary_variables_are_kept() -> None:
    env = {name: "/usr/bin:/bin" if name == "PATH" else "x" for name in BENIGN}
    assert scrub_env(env) == env


def test_a_command_with_a_nul_byte_is_one_clear_error(tmp_path: Path) -> None:
    """Found by the terminal-output attacks: a NUL in a command was a traceback (embedded null byte)."""
    text, error = run_shell(ctx(tmp_path), "echo a\x00b")
    assert error and "NUL" in text
