from pathlib import Path

import pytest

from nodwyn.compose.config import (
    LOCAL_MODEL,
    WindowConfig,
    config_path,
    edit_model,
    load_config,
    parse_config,
)
from nodwyn.compose.limits import default_reserve, session_limits
from nodwyn.compose.setup import open_agent
from nodwyn.errors import ConfigError, NotFoundError
from nodwyn.log import Store
from nodwyn.values.model import ModelEntry


def env_for(path: Path) -> dict[str, str]:
    return {"NODWYN_CONFIG": str(path), "HOME": str(path.parent)}


def test_missing_file_gives_the_builtin_local_model(tmp_path: Path) -> None:
    config = load_config({"HOME": str(tmp_path)})
    assert config.control == LOCAL_MODEL
    assert config.model().api == "local"
    assert config.path == tmp_path / ".config" / "nodwyn" / "config.toml"


def test_xdg_and_override_paths(tmp_path: Path) -> None:
    assert config_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "nodwyn" / "config.toml"
    assert config_path({"NODWYN_CONFIG": "/x/y.toml", "XDG_CONFIG_HOME": "/z"}) == Path("/x/y.toml")


def test_a_full_entry_loads(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        """
[control]
model = "router"

[window]
high_water = 6000
low_water = 3000

[tools]
approve = ["shell"]
shell_timeout = 5

[models.router]
provider = "openrouter"
api = "openai-chat"
family = "openrouter"
model = "z-ai/glm"
base_url = "http://127.0.0.1:9/v1"
credential = "OPENROUTER_API_KEY"
context_size = 131072
cache_key = "header"
keep_reasoning = true
prices = { input = 0.5, output = 2, cached_input = 0.05 }
"""
    )
    config = load_config(env_for(path))
    m = config.model()
    assert (m.name, m.api, m.family, m.cache_key, m.keep_reasoning) == (
        "router",
        "openai-chat",
        "openrouter",
        "header",
        True,
    )
    assert m.prices is not None and m.prices.cached_input == 0.05
    assert config.providers["router"] == "openrouter"
    assert config.approve == {"shell"} and config.shell_timeout == 5.0
    assert config.window.high_water == 6000


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("[window\nhigh_water = 1", "not valid TOML"),
        ("[window]\nhigh_water = 'big'", "high_water must be an integer"),
        ("[window]\nhigh_wat = 5", "high_wat"),
        ("[control]\nmodel = 'nope'", "'nope' has no [models.nope]"),
        ("[models.x]\napi = 'openai-chat'\nmodel = 'm'\ncontext_size = 100", "needs base_url"),
        ("[models.x]\napi = 'telepathy'\nmodel = 'm'\ncontext_size = 100", "api must be one of"),
        ("[models.x]\napi = 'ollama'\nbase_url='http://h'\nmodel = 'm'", "missing context_size"),
        ("[models.x]\napi='ollama'\nbase_url='http://h'\nmodel='m'\ncontext_size=9\ncolour=1", "colour"),
        ("[tools]\napprove = 'shell'", "list of tool names"),
        ("[surprise]\na = 1", "unknown table [surprise]"),
        (
            "[models.x]\napi='ollama'\nbase_url='http://h'\nmodel='m'\ncontext_size=9\ncache_diagnostics=true",
            "cache_diagnostics: only the anthropic and responses APIs",
        ),
    ],
)
def test_malformed_config_is_one_clear_error(tmp_path: Path, text: str, names: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_config(env_for(path))
    message = str(exc.value)
    assert names in message and str(path) in message and "\n" not in message


def test_named_config_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(env_for(tmp_path / "absent.toml"))


def test_window_checked_against_the_models_context(tmp_path: Path) -> None:
    model = load_config({"HOME": str(tmp_path)}).model()
    ceiling = model.context_size - default_reserve(model.context_size)
    with pytest.raises(ConfigError, match=r"low_water = 5000 must be below high_water .* at most 2999"):
        session_limits(WindowConfig(high_water=3000, low_water=5000), model)
    with pytest.raises(ConfigError, match="output_reserve"):
        session_limits(WindowConfig(output_reserve=model.context_size // 2), model)
    limits = session_limits(WindowConfig(high_water=3000, low_water=2000), model)
    assert (limits.high_water, limits.low_water, limits.ceiling) == (3000, 2000, ceiling)


def test_water_marks_set_too_high_shrink_to_fit_the_context_less_the_reply_cap(tmp_path: Path) -> None:
    """Marks set in config.toml shrink to fit a context too small
    for them, less the reply cap, as unset ones do; a high_water above the ceiling is not refused."""
    from nodwyn.compose.limits import shrunk

    model = load_config({"HOME": str(tmp_path)}).model()  # the built-in local model, 4,096 tokens
    reserve = default_reserve(model.context_size)
    limits = session_limits(WindowConfig(high_water=61_440, low_water=30_720), model)
    assert limits.high_water == model.context_size - reserve == limits.ceiling
    assert limits.low_water < limits.high_water
    assert shrunk(WindowConfig(high_water=61_440, low_water=30_720), limits) == [
        f"[window] high_water = 61440 does not fit the model's context; the session uses {limits.high_water}",
        f"[window] low_water = 30720 does not fit the model's context; the session uses {limits.low_water}",
    ]
    only_low = session_limits(WindowConfig(low_water=30_720), model)
    assert only_low.low_water < only_low.high_water <= only_low.ceiling


def test_default_reply_cap_is_the_seeds_8ki_at_a_96ki_context() -> None:
    """80 Ki input plus 8 Ki reserved for the reply at a 96 Ki context; and with it the
    1Mi context's result cap of 16,128."""
    assert default_reserve(98_304) == 8_192
    assert default_reserve(1_048_576) == 8_192
    one_mi = ModelEntry(name="big", api="openai-chat", model="m", base_url="http://h", context_size=1_048_576)
    limits = session_limits(WindowConfig(), one_mi)
    assert (limits.high_water, limits.max_result_tokens, limits.output_reserve) == (774_144, 16_128, 8_192)


def test_models_add_and_set_keep_comments_and_order(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    original = (
        '# my settings\n[control]\nmodel = "local"  # the default\n\n'
        "[window]\n# keep it small\nhigh_water = 6000\n"
    )
    path.write_text(original)
    edit_model(
        path,
        "fake",
        {"api": "openai-chat", "model": "m1", "base_url": "http://127.0.0.1:1/v1", "context_size": "32000"},
        create=True,
    )
    edit_model(path, "fake", {"keep_reasoning": "true", "prices.input": "0.5"}, create=False)
    text = path.read_text()
    assert text.startswith(original)
    assert "# keep it small" in text and "# the default" in text
    m = load_config(env_for(path)).model("fake")
    assert m.context_size == 32000 and m.keep_reasoning and m.prices is not None and m.prices.input == 0.5


def test_models_set_refuses_bad_values_and_keeps_the_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    edit_model(
        path,
        "fake",
        {"api": "ollama", "model": "m", "base_url": "http://h", "context_size": "8192"},
        create=True,
    )
    before = path.read_text()
    with pytest.raises(ConfigError, match="cache_key must be one of"):
        edit_model(path, "fake", {"cache_key": "sometimes"}, create=False)
    with pytest.raises(ConfigError, match="already exists"):
        edit_model(path, "fake", {"api": "ollama"}, create=True)
    with pytest.raises(NotFoundError, match="models add ghost"):
        edit_model(path, "ghost", {"model": "x"}, create=False)
    assert path.read_text() == before


def test_approving_a_tool_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[tools]\napprove = ["fs_write"]\n')
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {**env_for(path), "NODWYN_HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    with pytest.raises(ConfigError) as exc:
        open_agent(env=env, workspace=ws)
    message = str(exc.value)
    assert message.startswith(f"{path} [tools] approve: 'fs_write' is not a tool;") and "fs-write" in message
    assert not (tmp_path / "home").exists() or Store(tmp_path / "home").ids() == []


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ("model = 'm'\ncontext_size = 100\nbase_url = 'http://h'", "api"),
        ("api = 'ollama'\ncontext_size = 100\nbase_url = 'http://h'", "model"),
        ("api = 'ollama'\nmodel = 'm'\nbase_url = 'http://h'", "context_size"),
        ("api = 'ollama'\nmodel = 'm'\ncontext_size = 100", "base_url"),
    ],
)
def test_a_missing_model_key_says_which_table_and_what_to_add(tmp_path: Path, table: str, key: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f"[models.x]\n{table}\n")
    with pytest.raises(ConfigError) as exc:
        load_config(env_for(path))
    assert str(exc.value).startswith(f"{path} [models.x]: ") and f"add {key} = " in str(exc.value)


def test_a_session_opens_with_a_high_water_above_the_ceiling_and_records_what_it_used(tmp_path: Path) -> None:
    """Marks too large for the model, as a person meets them: config.toml sets 60Ki/30Ki marks and the
    control model has a 32,768-token context; the session starts (main refused it) and its recipe
    records the marks it runs with, so replay needs no configuration."""
    path = tmp_path / "config.toml"
    path.write_text(
        '[control]\nmodel = "small"\n\n[window]\nhigh_water = 61440\nlow_water = 30720\n\n'
        '[models.small]\napi = "openai-chat"\nmodel = "m"\nbase_url = "http://127.0.0.1:9/v1"\n'
        "context_size = 32768\n"
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {**env_for(path), "NODWYN_HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    opened = open_agent(env=env, workspace=ws)
    try:
        limits = opened.agent.settings.recipe.limits
        first = next(opened.agent.log.read(1, 1))
    finally:
        opened.close()
    assert limits.high_water == 32_768 - default_reserve(32_768) == limits.ceiling
    assert limits.low_water < limits.high_water
    assert first.data["recipe"]["limits"]["high_water"] == limits.high_water


def test_tool_timeout_and_shell_env(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    config = parse_config('[tools]\ntool_timeout = 5\nshell_env = ["GITHUB_TOKEN"]\n', path)
    assert config.tool_timeout == 5.0 and config.shell_env == frozenset({"GITHUB_TOKEN"})
    assert parse_config("", path).tool_timeout == 60.0 and parse_config("", path).shell_env == frozenset()
    for bad in ("tool_timeout = 0", "tool_timeout = nan", "shell_env = 'X'", 'shell_env = [""]'):
        with pytest.raises(ConfigError, match=r"\[tools\] (tool_timeout|shell_env)"):
            parse_config(f"[tools]\n{bad}\n", path)


def test_cache_diagnostics_is_off_unless_the_entry_says_so(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        "[models.a]\napi='anthropic'\nbase_url='https://api.anthropic.com'\nmodel='claude-x'\ncontext_size=200000\ncache_diagnostics=true\n"
        "[models.b]\napi='anthropic'\nbase_url='https://api.anthropic.com'\nmodel='claude-x'\ncontext_size=200000\n"
    )
    models = load_config(env_for(path)).models
    assert models["a"].cache_diagnostics is True and models["b"].cache_diagnostics is False
