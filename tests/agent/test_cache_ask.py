"""Anthropic's API caches nothing unless asked: an Anthropic model starts with the five-minute
cache ask written to its entry, and `nodwyn cache` names a missing ask as the cause of what a
server that caches only when asked did not cache, instead of calling it a server miss."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nodwyn.cli import cli
from nodwyn.compose.config import edit_model, load_config
from nodwyn.compose.setup import open_agent
from nodwyn.fakes import FakeApi, FakeServer
from nodwyn.log import Store


def entries(path: Path) -> dict[str, Any]:
    models: dict[str, Any] = tomllib.loads(path.read_text())["models"]
    return models


def test_models_add_writes_the_five_minute_ask_to_an_anthropic_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "config.toml"
    path.write_text("# mine\n")
    monkeypatch.setenv("NODWYN_CONFIG", str(path))
    res = CliRunner().invoke(
        cli,
        [
            "models",
            "add",
            "claude",
            "api=anthropic",
            "model=claude-x",
            "base_url=http://h",
            "context_size=200000",
        ],
    )
    assert res.exit_code == 0, res.output
    assert entries(path)["claude"]["cache_control"] == "ephemeral"
    assert load_config({"NODWYN_CONFIG": str(path)}).model("claude").cache_control == "ephemeral"
    # an entry made an Anthropic one later gets it too; an ask the person set is kept, "off" included
    edit_model(
        path,
        "other",
        {"api": "ollama", "model": "m", "base_url": "http://h", "context_size": "9"},
        create=True,
    )
    assert "cache_control" not in entries(path)["other"]
    edit_model(path, "other", {"api": "anthropic"}, create=False)
    assert entries(path)["other"]["cache_control"] == "ephemeral"
    edit_model(path, "claude", {"cache_control": "1h"}, create=False)
    edit_model(path, "other", {"cache_control": "off"}, create=False)
    config = load_config({"NODWYN_CONFIG": str(path)})
    assert (config.model("claude").cache_control, config.model("other").cache_control) == ("1h", None)
    assert entries(path)["other"]["cache_control"] == "off" and path.read_text().startswith("# mine\n")


def test_a_hand_written_anthropic_entry_gets_the_ask_and_it_is_written_when_a_session_opens(
    tmp_path: Path, workspace: Path
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        '[control]\nmodel = "claude"  # the model\n\n'
        '[models.claude]\napi = "anthropic"\nmodel = "claude-x"\nbase_url = "http://127.0.0.1:9"\n'
        "context_size = 200000\n\n"
        '[models.plain]\napi = "anthropic"\nmodel = "claude-y"\nbase_url = "http://127.0.0.1:9"\n'
        'context_size = 200000\ncache_control = "off"\n'
    )
    env = {"NODWYN_HOME": str(tmp_path / "home"), "NODWYN_CONFIG": str(path), "HOME": str(tmp_path)}
    config = load_config(env)
    assert config.model("claude").cache_control == "ephemeral"  # what it sends, written or not
    assert config.model("plain").cache_control is None
    notices: list[str] = []

    class Notices:
        def __getattr__(self, name: str) -> Any:
            return notices.append if name == "notice" else (lambda *a, **k: None)

    open_agent(env=env, workspace=workspace, display=Notices()).close()
    assert entries(path)["claude"]["cache_control"] == "ephemeral"
    assert entries(path)["plain"]["cache_control"] == "off"
    assert path.read_text().startswith('[control]\nmodel = "claude"  # the model\n')
    assert any('cache_control = "ephemeral" to [models.claude]' in n for n in notices)
    assert load_config(env).unasked == ()


def _reads(n: int) -> list[dict[str, Any]]:
    calls = [
        {"calls": [{"name": "fs-read", "id": f"r{i}", "arguments": {"path": f"m{i}.py"}}]} for i in range(n)
    ]
    return [*calls, {"text": "Read them all."}]


@pytest.mark.parametrize(
    ("api", "entry"),
    [
        ("anthropic", 'api = "anthropic"\ncache_control = "off"\n'),
        # an OpenAI-compatible route to a server that caches only when asked (Claude)
        ("openai-chat", 'api = "openai-chat"\nfamily = "openrouter"\n'),
    ],
)
def test_nodwyn_cache_names_a_missing_cache_ask_instead_of_a_server_miss(
    tmp_path: Path, workspace: Path, api: FakeApi, entry: str
) -> None:
    for i in range(4):
        (workspace / f"m{i}.py").write_text(f"# module {i}\n" + "def f():\n    return 1\n" * 400)
    family = "openrouter" if api == "openai-chat" else None
    with FakeServer(api=api, family=family, cache="breakpoints", script=_reads(4)) as fake:
        path = tmp_path / "config.toml"
        path.write_text(
            f'[control]\nmodel = "m"\n\n[models.m]\n{entry}model = "fake-model"\n'
            f'base_url = "{fake.url}"\ncontext_size = 200000\n'
        )
        env = {"NODWYN_HOME": str(tmp_path / "home"), "NODWYN_CONFIG": str(path), "HOME": str(tmp_path)}
        opened = open_agent(env=env, workspace=workspace)
        try:
            assert opened.agent.user_turn("Read m0.py to m3.py.").text == "Read them all."
            sid = opened.agent.session_id
        finally:
            opened.close()
        assert all("cache_control" not in r.body for r in fake.requests)
    with Store(tmp_path / "home").open(sid) as log:
        asks = [e.data.get("cache_ask") for e in log.read(1) if e.kind == "llm.req"]
    assert asks == ["none"] * 5
    res = CliRunner().invoke(cli, ["cache", sid, "--root", str(tmp_path / "home")])
    assert res.exit_code == 0, res.output
    kinds = [line.split(None, 2)[2] for line in res.output.splitlines() if line[:7].strip().isdigit()]
    assert "server miss" not in res.output
    assert sum(k.startswith("no cache ask") for k in kinds) >= 3, res.output
    assert 'set cache_control = "ephemeral" in [models.m]' in res.output
    table = CliRunner().invoke(cli, ["stats", sid, "--root", str(tmp_path / "home")]).output
    assert "suspected: no cache ask" in table and "suspected server miss" not in table
