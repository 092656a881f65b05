"""Malformed and hostile config.toml: each is refused in one line naming the
file and key, before a session folder is made, and no number in it can lift a cap."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nodwyn.agent.tools import ToolContext, builtin_tools, run_call
from nodwyn.agent.tools.shell import capped_timeout
from nodwyn.compose.config import load_config
from nodwyn.compose.setup import open_agent
from nodwyn.errors import ConfigError
from nodwyn.values.content import ToolCall

pytestmark = pytest.mark.attack("config")

NODWYN = str(Path(sys.executable).parent / "nodwyn")
MODEL = "[control]\nmodel = 'x'\n[models.x]\napi = 'openai-chat'\nmodel = 'm'\n"


def _load(tmp_path: Path, text: str) -> str:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config({"NODWYN_CONFIG": str(path), "HOME": str(tmp_path)})
    message = str(err.value)
    assert "\n" not in message and str(path) in message
    return message


BAD = {
    "ipv6-unclosed": (MODEL + "base_url = 'http://[::1'\ncontext_size = 8192\n", "base_url"),
    "bad-port": (MODEL + "base_url = 'http://h:99999'\ncontext_size = 8192\n", "base_url"),
    "not-http": (MODEL + "base_url = 'file:///etc/passwd'\ncontext_size = 8192\n", "base_url"),
    "deep-arrays": ("a = " + "[" * 50_000 + "]" * 50_000 + "\n", "nested too deeply"),
    "deep-tables": ("a = " + "{b = " * 50_000 + "1" + "}" * 50_000 + "\n", "nested too deeply"),
    "context-1": (MODEL + "base_url = 'http://h'\ncontext_size = 1\n", "at least 2048"),
    "context-2^64": (MODEL + "base_url = 'http://h'\ncontext_size = 18446744073709551615\n", "at most"),
    "shell-nan": ("[tools]\nshell_timeout = nan\n", "shell_timeout"),
    "shell-inf": ("[tools]\nshell_timeout = inf\n", "shell_timeout"),
    "shell-negative": ("[tools]\nshell_timeout = -1\n", "shell_timeout"),
    "price-nan": (MODEL + "base_url = 'http://h'\ncontext_size = 8192\nprices = { input = nan }\n", "prices"),
    "network-nan": ("[network]\nidle_timeout = nan\n", "idle_timeout"),
    "network-zero": ("[network]\nreply_timeout = 0\n", "reply_timeout"),
    "network-unknown": ("[network]\nread_timeout = 5\n", "read_timeout"),
    "reply-cap-zero": ("[network]\nmax_reply_mb = 0\n", "max_reply_mb"),
    "retries-negative": ("[network]\nmax_retries = -1\n", "max_retries"),
    "window-huge": ("[window]\nhigh_water = 18446744073709551616\n", "high_water"),
}


@pytest.mark.parametrize("case", sorted(set(BAD) - {"context-1"}))  # that one: when a session opens
def test_a_malformed_value_is_one_line_naming_it(tmp_path: Path, case: str) -> None:
    text, names = BAD[case]
    message = _load(tmp_path, text)
    assert names in message, message


@pytest.mark.parametrize("context", [1, 2, 100, 2047])
def test_a_tiny_context_size_gives_no_negative_advice(tmp_path: Path, context: int) -> None:
    path = tmp_path / "config.toml"
    path.write_text(MODEL + f"base_url = 'http://h'\ncontext_size = {context}\n")
    env = {"NODWYN_CONFIG": str(path), "HOME": str(tmp_path), "NODWYN_HOME": str(tmp_path / "home")}
    with pytest.raises(ConfigError) as err:
        open_agent(env=env, workspace=tmp_path)
    message = str(err.value)
    assert "\n" not in message and str(path) in message and "context_size" in message
    assert "at least 2048" in message and not re.search(r"(below|to at most) -?[0-9]", message)
    assert not (tmp_path / "home" / "sessions").exists()


@pytest.mark.parametrize("case", ["ipv6-unclosed", "context-2^64", "deep-arrays", "shell-nan", "context-1"])
def test_the_cli_refuses_it_in_one_line_and_makes_no_session_folder(tmp_path: Path, case: str) -> None:
    (tmp_path / "config.toml").write_text(BAD[case][0])
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "NODWYN_HOME": str(tmp_path / "home"),
        "NODWYN_CONFIG": str(tmp_path / "config.toml"),
    }
    done = subprocess.run(
        [NODWYN, "run", "hello"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    sessions = tmp_path / "home" / "sessions"
    assert not sessions.exists() or list(sessions.iterdir()) == []


def test_a_start_that_cannot_record_its_recipe_leaves_no_session_folder(tmp_path: Path) -> None:
    """Past the config (an entry built in code): the first append fails, the folder goes."""
    from nodwyn.compose.config import Config
    from nodwyn.values.model import ModelEntry

    big = ModelEntry(name="x", api="openai-chat", model="m", context_size=2**70, base_url="http://h")
    config = Config(path=tmp_path / "c.toml", control="x", models={"x": big})
    with pytest.raises(Exception) as err:
        open_agent(env={"NODWYN_HOME": str(tmp_path / "home")}, workspace=tmp_path, config=config)
    assert "\n" not in str(err.value)
    sessions = tmp_path / "home" / "sessions"
    assert not sessions.exists() or list(sessions.iterdir()) == []


@pytest.mark.parametrize(
    ("asked", "cap", "got"),
    [
        ("nan", 5.0, 5.0),
        (float("nan"), 5.0, 5.0),
        ("inf", 5.0, 5.0),
        (1e308, 5.0, 5.0),
        (-3, 5.0, 1.0),
        ("abc", 5.0, 5.0),
        (None, 5.0, 5.0),
        ([1], 5.0, 5.0),
        (2, 5.0, 2.0),
    ],
)
def test_a_model_supplied_timeout_never_lifts_the_cap(asked: object, cap: float, got: float) -> None:
    assert capped_timeout(asked, cap) == got


@pytest.mark.needs("bwrap")
@pytest.mark.parametrize("asked", [10_000, 2**62, 2**53 + 1])
def test_a_shell_command_is_killed_at_the_cap_whatever_timeout_the_model_asks(
    tmp_path: Path, asked: object
) -> None:
    ctx = ToolContext(
        workspace=tmp_path, read_budget_tokens=10_000, approve=lambda t, w: True, shell_timeout=1
    )
    call = ToolCall(id="c1", name="shell", arguments=json.dumps({"command": "sleep 20", "timeout": asked}))
    start = time.monotonic()
    out = run_call(call, builtin_tools(), ctx)
    assert time.monotonic() - start < 8
    assert out.error and "timed out after 1 s" in out.text
