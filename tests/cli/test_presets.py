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
    "mistral", "ollama", "llamacpp", "vllm",
}  # fmt: skip


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
    no_size = nodwyn(env, "models", "add", "glm", "--preset", "openrouter", "model=z-ai/glm-5.3-flash")
    assert no_size.returncode == 2 and not config.exists()  # refused, nothing written
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
