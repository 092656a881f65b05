"""Provider presets (issue 26, item 3; ADR 0382): ``nodwyn models presets`` and ``nodwyn models add
NAME --preset P model=...`` run as subprocesses; every preset is an entry config.toml takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodwyn.compose.config import parse_config
from nodwyn.compose.config_keys import MODEL_KEYS
from nodwyn.compose.presets import all_presets
from nodwyn.fakes import FakeServer

from .test_run import nodwyn

ASKED = {
    "openrouter", "openai", "anthropic", "deepseek", "groq", "cerebras", "fireworks", "together",
    "mistral", "gemini", "ollama", "llamacpp", "vllm",
}  # fmt: skip
# The endpoint each preset's requests go to, as each provider documents it.
ENDPOINTS = {
    "openrouter": "https://openrouter.ai/api/v1/chat/completions",
    "openai": "https://api.openai.com/v1/responses",
    "anthropic": "https://api.anthropic.com/v1/messages",
    "deepseek": "https://api.deepseek.com/v1/chat/completions",
    "groq": "https://api.groq.com/openai/v1/chat/completions",
    "cerebras": "https://api.cerebras.ai/v1/chat/completions",
    "fireworks": "https://api.fireworks.ai/inference/v1/chat/completions",
    "together": "https://api.together.xyz/v1/chat/completions",
    "mistral": "https://api.mistral.ai/v1/chat/completions",
    "gemini": "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions",
    "ollama": "http://127.0.0.1:11434/api/chat",
    "llamacpp": "http://127.0.0.1:8080/v1/chat/completions",
    "vllm": "http://127.0.0.1:8000/v1/chat/completions",
}


@pytest.mark.parametrize("name", sorted(ASKED))
def test_each_preset_with_a_model_and_context_size_is_an_entry_the_parser_takes(
    name: str, tmp_path: Path
) -> None:
    table = all_presets()[name]
    assert set(table) - {"about"} <= MODEL_KEYS and "model" not in table and "context_size" not in table
    keys = "".join(f'{k} = "{v}"\n' for k, v in table.items() if k != "about")
    config = parse_config(f'[models.x]\n{keys}model = "m"\ncontext_size = 8000\n', tmp_path / "config.toml")
    assert config.models["x"].api == table["api"] and config.models["x"].base_url == table["base_url"]


def test_models_presets_lists_every_preset_with_its_keys(env: dict[str, str]) -> None:
    done = nodwyn(env, "models", "presets")
    assert done.returncode == 0, done.stderr
    listed = {line.split()[0]: line for line in done.stdout.splitlines()}
    assert set(listed) == ASKED == set(all_presets())
    assert "base_url=https://openrouter.ai/api/v1" in listed["openrouter"]
    assert "credential=OPENROUTER_API_KEY" in listed["openrouter"]


def test_add_with_a_preset_writes_a_whole_entry_and_any_key_overrides(env: dict[str, str]) -> None:
    config = Path(env["NODWYN_CONFIG"])
    config.unlink(missing_ok=True)
    with FakeServer(api="openai-chat", models=("z-ai/glm-5.3-flash",)) as fake:  # its list: ids only
        keyed = {**env, "OPENROUTER_API_KEY": "sk-or-v1-test-0123456789"}
        no_size = nodwyn(
            keyed, "models", "add", "glm", "--preset", "openrouter", "model=z-ai/glm-5.3-flash",
            f"base_url={fake.url}/api/v1",
        )  # fmt: skip
        listed = [r.path for r in fake.requests]
    assert no_size.returncode == 2 and not config.exists()  # refused, nothing written
    assert listed == ["/api/v1/models"] and "not in the provider's model list" in no_size.stderr
    assert "needs context_size=" in no_size.stderr and "never guessed" in no_size.stderr
    unknown = nodwyn(env, "models", "add", "x", "--preset", "openruter", "model=m", "context_size=1")
    assert unknown.returncode == 2 and "did you mean 'openrouter'" in unknown.stderr
    added = nodwyn(
        env,
        "models",
        "add",
        "glm",
        "--preset",
        "openrouter",
        "model=z-ai/glm-5.3-flash",
        "context_size=131072",
    )
    assert added.returncode == 0, added.stderr
    entry = parse_config(config.read_text(), config).models["glm"]
    assert (entry.api, entry.family, entry.base_url, entry.credential, entry.context_size) == (
        "openai-chat",
        "openrouter",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
        131072,
    )
    with FakeServer(api="openai-chat", script=[{"text": "From the preset."}]) as fake:
        over = nodwyn(
            env, "models", "add", "mine", "--preset", "vllm", "model=fake-model", "context_size=32000",
            f"base_url={fake.url}",
        )  # fmt: skip
        assert over.returncode == 0, over.stderr
        ran = nodwyn(env, "run", "-m", "mine", "Say it.")
        sent = [r for r in fake.requests if r.path.endswith("/chat/completions")]
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "From the preset.\n" and sent[0].body["model"] == "fake-model"


@pytest.mark.parametrize("name", sorted(ENDPOINTS))
def test_every_presets_url_builds_its_providers_endpoint(name: str, tmp_path: Path) -> None:
    from nodwyn.dialects import dialect_for
    from nodwyn.transport.http import join_url
    from nodwyn.values.content import TextPart, UserMessage
    from nodwyn.values.request import Request

    assert set(ENDPOINTS) == set(all_presets())
    table = all_presets()[name]
    keys = "".join(f'{k} = "{v}"\n' for k, v in table.items() if k != "about")
    entry = parse_config(f'[models.x]\n{keys}model = "m"\ncontext_size = 8000\n', tmp_path / "c.toml").models[
        "x"
    ]
    request = Request(
        system="s", tools=(), messages=(UserMessage(parts=(TextPart(text="hi"),)),), max_output=8
    )
    path = dialect_for(entry).encode(request, session_key=None).path
    assert entry.base_url is not None and join_url(entry.base_url, path) == ENDPOINTS[name]


def test_the_gemini_preset_reaches_its_paths_and_takes_the_listed_context(env: dict[str, str]) -> None:
    """Gemini's OpenAI-compatible base ends in /v1beta/openai: the requests go to /chat/completions
    and /models under it (not /v1/...), and the context size comes from the model list."""
    config = Path(env["NODWYN_CONFIG"])
    config.unlink(missing_ok=True)
    env = {**env, "GEMINI_API_KEY": "gm-test-key-0123456789"}
    script = [{"text": "OK"}, {"text": "OK"}]
    fields = {"gemini-3-flash": {"context_length": 1048576}}
    with FakeServer(
        api="openai-chat", script=script, models=("gemini-3-flash",), model_fields=fields
    ) as fake:
        base = f"{fake.url}/v1beta/openai"
        added = nodwyn(
            env, "models", "add", "gem", "--preset", "gemini", "model=gemini-3-flash", f"base_url={base}"
        )
        tested = nodwyn(env, "models", "test", "gem")
        paths = [r.path for r in fake.requests]
        auth = {r.headers.get("authorization") for r in fake.requests}
    assert added.returncode == 0, added.stderr
    assert "context_size=1048576 from the provider's model list (context_length)" in added.stderr
    assert parse_config(config.read_text(), config).models["gem"].context_size == 1_048_576
    assert tested.returncode == 0, tested.stderr
    assert "context: 1,048,576 tokens in the provider's model list (context_length)" in tested.stdout
    assert paths == [
        "/v1beta/openai/models",
        "/v1beta/openai/chat/completions",
        "/v1beta/openai/chat/completions",
        "/v1beta/openai/models",
    ]
    assert auth == {"Bearer gm-test-key-0123456789"}


def _entry(env: dict[str, str], url: str) -> None:
    Path(env["NODWYN_CONFIG"]).write_text(
        f'[models.f]\napi = "openai-chat"\nmodel = "fake-model"\nbase_url = "{url}"\ncontext_size = 32000\n'
    )


def test_models_test_says_when_the_entry_and_the_providers_list_differ(env: dict[str, str]) -> None:
    fields = {"fake-model": {"context_window": 131072}}  # Groq's name for it
    with FakeServer(api="openai-chat", script=[{"text": "OK"}, {"text": "OK"}], model_fields=fields) as fake:
        _entry(env, fake.url)
        tested = nodwyn(env, "models", "test", "f")
    assert tested.returncode == 0, tested.stderr
    assert (
        "context: 131,072 tokens in the provider's model list (context_window); the entry says 32,000; "
        "to use the provider's: nodwyn models set f context_size=131072"
    ) in tested.stdout
    with FakeServer(api="openai-chat", script=[{"text": "OK"}, {"text": "OK"}]) as fake:
        _entry(env, fake.url)
        tested = nodwyn(env, "models", "test", "f")
    assert (
        "context: the provider's model list publishes none for fake-model; the entry says 32,000"
        in tested.stdout
    )
