"""Credentials for a session come from the environment and from the keychain file (mode 0600), each
bound to its origins: what goes over the wire is checked at the fake, and a loose keychain is refused
before any request is sent."""

from pathlib import Path

import pytest

from nodwyn.compose.setup import open_agent
from nodwyn.errors import ConfigError, OriginError
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.transport.credentials import write_keychain

SECRET = "kc-value-not-a-known-shape-123"


def _config(tmp_path: Path, url: str) -> Path:
    config = tmp_path / "config.toml"
    config.write_text(
        f"""[models.m]
api = "openai-chat"
model = "m-1"
base_url = "{url}"
credential = "team-key"
context_size = 32000
[control]
model = "m"
"""
    )
    return config


def _env(tmp_path: Path, config: Path, keychain: Path) -> dict[str, str]:
    return {
        "NODWYN_HOME": str(tmp_path / "home"),
        "NODWYN_CONFIG": str(config),
        "NODWYN_KEYCHAIN": str(keychain),
        "HOME": str(tmp_path),
    }


def test_a_keychain_credential_reaches_its_own_origin(tmp_path: Path, workspace: Path) -> None:
    with FakeServer(api="openai-chat", script=[{"text": "hello"}]) as fake:
        keychain = tmp_path / "keychain.json"
        write_keychain(keychain, {"team-key": {"value": SECRET, "origins": [fake.url]}})
        env = _env(tmp_path, _config(tmp_path, fake.url), keychain)
        agent = open_agent(env=env, workspace=workspace).agent
        assert agent.user_turn("hi").text == "hello"
        agent.log.close()
        sent = [r for r in fake.requests if r.path.endswith("/chat/completions")]
    assert sent[0].headers["authorization"] == f"Bearer {SECRET}"
    log_bytes = b"".join(p.read_bytes() for p in (tmp_path / "home").rglob("*.jsonl"))
    assert SECRET.encode() not in log_bytes


def test_a_keychain_bound_elsewhere_is_refused_before_sending(tmp_path: Path, workspace: Path) -> None:
    with FakeServer(api="openai-chat", script=[{"text": "hello"}]) as fake:
        keychain = tmp_path / "keychain.json"
        write_keychain(keychain, {"team-key": {"value": SECRET, "origins": ["https://api.example.com"]}})
        env = _env(tmp_path, _config(tmp_path, fake.url), keychain)
        agent = open_agent(env=env, workspace=workspace).agent
        with pytest.raises(OriginError, match="team-key"):
            agent.user_turn("hi")
        agent.log.close()
        assert fake.requests == []


def test_a_keychain_others_may_read_is_refused(tmp_path: Path, workspace: Path) -> None:
    keychain = tmp_path / "keychain.json"
    write_keychain(keychain, {"team-key": {"value": SECRET, "origins": ["http://127.0.0.1:9"]}})
    keychain.chmod(0o644)
    env = _env(tmp_path, _config(tmp_path, "http://127.0.0.1:9"), keychain)
    with pytest.raises(ConfigError, match="chmod 600"):  # before a session is written
        open_agent(env=env, workspace=workspace)
    assert Store(Path(env["NODWYN_HOME"])).ids() == []
