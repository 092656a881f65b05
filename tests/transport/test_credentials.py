"""Credentials: from an env mapping or a 0600 keychain, bound to origins, never shown."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nodwyn.errors import ConfigError, NotFoundError, OriginError
from nodwyn.transport.credentials import PLAN_SCOPE, Credential, Credentials, origin_of, write_keychain
from nodwyn.values.model import ModelEntry

SECRET = "sk-test-4f9a1c0e7b2d"


def test_origin_is_scheme_host_and_port_with_defaults_made_explicit() -> None:
    assert origin_of("https://API.openai.com/v1/chat") == "https://api.openai.com:443"
    assert origin_of("http://127.0.0.1:8080/x") == "http://127.0.0.1:8080"
    assert origin_of("http://localhost/") == "http://localhost:80"
    with pytest.raises(ConfigError):
        origin_of("ftp://example.com")


def test_env_credentials_come_from_the_mapping_given_and_skip_unset_names() -> None:
    env = {"OPENAI_API_KEY": SECRET, "UNRELATED": "x"}
    creds = Credentials.from_env(
        env,
        {"OPENAI_API_KEY": ["https://api.openai.com"], "ANTHROPIC_API_KEY": ["https://api.anthropic.com"]},
    )
    assert sorted(creds.by_name) == ["OPENAI_API_KEY"]
    cred = creds.get("OPENAI_API_KEY")
    assert cred.origins == frozenset({"https://api.openai.com:443"})
    with pytest.raises(NotFoundError, match="ANTHROPIC_API_KEY"):
        creds.get("ANTHROPIC_API_KEY")


def test_a_credential_refuses_another_origin_without_saying_its_value() -> None:
    cred = Credential(name="openai", value=SECRET, origins=frozenset({origin_of("https://api.openai.com")}))
    cred.check("https://api.openai.com/v1/responses")
    for other in (
        "https://api.openai.com.evil.test/v1",
        "http://api.openai.com/v1",
        "https://api.openai.com:8443/",
    ):
        with pytest.raises(OriginError) as err:
            cred.check(other)
        assert SECRET not in str(err.value) and "openai" in str(err.value)
    assert SECRET not in repr(cred) and SECRET not in repr(Credentials.of([cred]))


def test_keychain_must_be_0600(tmp_path: Path) -> None:
    path = tmp_path / "keychain.json"
    write_keychain(
        path,
        {
            "plan": {
                "value": SECRET,
                "origins": ["https://api.openai.com"],
                "scopes": f"openid {PLAN_SCOPE}",
            },
            "claude": {"value": "sk-ant-x", "origins": ["https://api.anthropic.com"], "header": "x-api-key"},
        },
    )
    assert (path.stat().st_mode & 0o777) == 0o600
    creds = Credentials.from_keychain(path)
    assert creds.get("plan").plan_usage and not creds.get("claude").plan_usage
    assert creds.get("claude").auth_headers("anthropic") == {"x-api-key": "sk-ant-x"}
    assert creds.get("plan").auth_headers("responses") == {"authorization": f"Bearer {SECRET}"}
    os.chmod(path, 0o644)
    with pytest.raises(ConfigError, match=f"chmod 600 {path}") as err:
        Credentials.from_keychain(path)
    assert SECRET not in str(err.value)


def test_a_broken_keychain_is_named_without_its_contents(tmp_path: Path) -> None:
    path = tmp_path / "keychain.json"
    path.write_text('{"credentials": {"a": {"value": "' + SECRET + '", "origins": ')
    path.chmod(0o600)
    with pytest.raises(ConfigError) as err:
        Credentials.from_keychain(path)
    assert SECRET not in str(err.value) and str(path) in str(err.value)
    path.write_text(json.dumps({"credentials": {"a": {"value": SECRET}}}))
    with pytest.raises(ConfigError, match="names no origin"):
        Credentials.from_keychain(path)


def test_env_credentials_bind_to_the_addresses_of_the_models_that_name_them() -> None:
    models = [
        ModelEntry(
            name="a",
            api="responses",
            model="m",
            context_size=1000,
            base_url="https://api.openai.com/v1",
            credential="OPENAI_API_KEY",
        ),
        ModelEntry(
            name="b",
            api="openai-chat",
            model="m",
            context_size=1000,
            base_url="https://openrouter.ai/api",
            credential="OPENROUTER_API_KEY",
        ),
        ModelEntry(name="c", api="ollama", model="m", context_size=1000, base_url="http://127.0.0.1:11434"),
    ]
    creds = Credentials.from_env_for_models({"OPENAI_API_KEY": SECRET, "OPENROUTER_API_KEY": "or-x"}, models)
    assert creds.get("OPENAI_API_KEY").origins == frozenset({"https://api.openai.com:443"})
    with pytest.raises(OriginError):
        creds.get("OPENAI_API_KEY").check("https://openrouter.ai/api/v1/chat/completions")
