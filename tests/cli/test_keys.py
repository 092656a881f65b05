"""``nodwyn keys set/list/rm`` keep the keychain beside config.toml (also when
NODWYN_CONFIG puts it elsewhere), mode 0600, each key bound to origins; a session uses it."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from nodwyn.fakes import FakeServer
from nodwyn.transport.credentials import origin_of

from .test_habits import chat_bodies, configure
from .test_run import nodwyn

VALUE = "kc-test-value-0123456789"


def test_keys_set_list_rm_and_a_session_uses_the_key(env: dict[str, str], tmp_path: Path) -> None:
    with FakeServer(api="openai-chat", script=[{"text": "keyed"}]) as fake:
        configure(env, fake.url, 'credential = "OTHER_KEY"\n')
        set_ = nodwyn(env, "keys", "set", "OTHER_KEY", stdin=VALUE + "\n")
        assert set_.returncode == 0, set_.stderr
        done = nodwyn(env, "run", "-m", "other", "hi")
        sent = [r for r in fake.requests if r.path.endswith("/chat/completions")]
    keychain = Path(env["NODWYN_CONFIG"]).parent / "keychain.json"  # beside NODWYN_CONFIG
    assert str(keychain) in set_.stdout and VALUE not in set_.stdout + set_.stderr
    assert stat.S_IMODE(keychain.stat().st_mode) == 0o600
    entry = json.loads(keychain.read_text())["credentials"]["OTHER_KEY"]
    assert entry == {"value": VALUE, "origins": [origin_of(fake.url)]}  # from the entry's base_url
    assert done.returncode == 0 and done.stdout == "keyed\n", done.stderr
    assert sent[0].headers["authorization"] == f"Bearer {VALUE}" and chat_bodies(fake)

    scoped = nodwyn(
        env,
        "keys",
        "set",
        "team",
        "--origin",
        "https://api.example.com",
        "--scope",
        "models.read",
        "--scope",
        "chatgpt.tokens.use.direct",
        stdin="team-value-0987654321",
    )
    assert scoped.returncode == 0, scoped.stderr
    listed = nodwyn(env, "keys", "list")
    assert listed.returncode == 0 and VALUE not in listed.stdout and "team-value" not in listed.stdout
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert rows["OTHER_KEY"].split()[1] == origin_of(fake.url)
    assert "https://api.example.com:443" in rows["team"]
    assert "scopes chatgpt.tokens.use.direct models.read" in rows["team"]
    assert stat.S_IMODE(keychain.stat().st_mode) == 0o600

    no_origin = nodwyn(env, "keys", "set", "LONELY", stdin="x-value")
    assert no_origin.returncode == 2 and "pass --origin" in no_origin.stderr

    removed = nodwyn(env, "keys", "rm", "team")
    assert removed.returncode == 0 and "team" not in json.loads(keychain.read_text())["credentials"]
    again = nodwyn(env, "keys", "rm", "team")
    assert again.returncode == 3
    assert f"no key 'team' in keychain {keychain} (beside NODWYN_CONFIG)" in again.stderr

    elsewhere = tmp_path / "vault" / "keys.json"
    named = {**env, "NODWYN_KEYCHAIN": str(elsewhere)}
    assert nodwyn(named, "keys", "set", "OTHER_KEY", stdin="v2-value-abcdefgh").returncode == 0
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o600
    assert "OTHER_KEY" in json.loads(elsewhere.read_text())["credentials"]
    missing = nodwyn({**env, "NODWYN_KEYCHAIN": str(tmp_path / "none.json")}, "keys", "rm", "OTHER_KEY")
    assert missing.returncode == 3 and f"{tmp_path / 'none.json'} (NODWYN_KEYCHAIN)" in missing.stderr


def test_keys_set_on_a_terminal_asks_for_origins_scopes_and_a_hidden_value(env: dict[str, str]) -> None:
    from .test_chat import Terminal

    Path(env["NODWYN_CONFIG"]).write_text("")
    term = Terminal(env, "keys", "set", "TEAM")
    try:
        term.expect("origins TEAM may reach (URLs, space-separated):")
        term.type("https://api.example.com http://127.0.0.1:8080\r")
        term.expect("scopes (space-separated; Enter for none):")
        term.type("models.read\r")
        term.expect("value of TEAM:")
        term.type(VALUE + "\r")
        term.expect("added TEAM")
    finally:
        code = term.close()
    assert code == 0 and VALUE not in term.text  # typed, never echoed
    keychain = Path(env["NODWYN_CONFIG"]).parent / "keychain.json"
    entry = json.loads(keychain.read_text())["credentials"]["TEAM"]
    assert entry == {
        "value": VALUE,
        "origins": ["http://127.0.0.1:8080", "https://api.example.com:443"],
        "scopes": ["models.read"],
    }
    assert stat.S_IMODE(keychain.stat().st_mode) == 0o600
