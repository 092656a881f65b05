"""The keys config.toml may hold, table by table: the parser refuses any other, ``docs/config.md``
documents each (a test checks the two agree), and ``nodwyn config show`` lists them with where each
effective value came from (issue 26, item 4; ADR 0381)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from nodwyn.mcp import KEYS as MCP_KEYS
from nodwyn.transport import NETWORK_KEYS

CONTROL_KEYS: Final = ("model", "project_doc")
TOOLS_KEYS: Final = (
    "approve",
    "shell_timeout",
    "tool_timeout",
    "shell_env",
    "sandbox",
    "network",
    "git_writable",
    "hidden",
    "approval",
)
WINDOW_KEYS: Final = ("high_water", "low_water", "max_result_tokens", "output_reserve")
MODEL_KEYS: Final = frozenset(
    {
        "provider",
        "api",
        "model",
        "family",
        "base_url",
        "server",
        "credential",
        "context_size",
        "keep_alive",
        "cache_key",
        "cache_control",
        "keep_reasoning",
        "reasoning_details_only",
        "takes_images",
        "edits",
        "reasoning_effort",
        "prices",
        "cache_diagnostics",
    }
)
PRICE_KEYS: Final = ("input", "output", "cached_input", "cache_write")

# table (as docs/config.md heads it) -> its keys
TABLES: Final[Mapping[str, frozenset[str]]] = {
    "control": frozenset(CONTROL_KEYS),
    "tools": frozenset(TOOLS_KEYS),
    "window": frozenset(WINDOW_KEYS),
    "network": frozenset(NETWORK_KEYS),
    "models.NAME": MODEL_KEYS,
    "models.NAME.prices": frozenset(PRICE_KEYS),
    "mcp.NAME": MCP_KEYS,
}

# the keys of the single tables, as the Config field (attribute path) that holds the effective value
FIELDS: Final[Mapping[str, Mapping[str, str]]] = {
    "control": {"model": "control", "project_doc": "project_doc"},
    "tools": {k: {"network": "sandbox_network"}.get(k, k) for k in TOOLS_KEYS},
    "window": {k: f"window.{k}" for k in WINDOW_KEYS},
    "network": {k: f"network.{'max_reply_bytes' if k == 'max_reply_mb' else k}" for k in NETWORK_KEYS},
}


def _get(obj: Any, attr: str) -> Any:
    for part in attr.split("."):
        obj = getattr(obj, part)
    if isinstance(obj, frozenset):
        return sorted(obj)
    return list(obj) if isinstance(obj, tuple) else obj


def effective(config: Any, doc: Mapping[str, Any]) -> list[tuple[str, Any, str]]:
    """``(table.key, value, source)`` for every key of the single tables, then every model entry's
    and MCP server's keys: ``source`` is the file's ``path:[table] key`` when the file sets it,
    else ``default`` (``built-in`` for a model entry the file does not hold)."""
    rows: list[tuple[str, Any, str]] = []
    for table, fields in FIELDS.items():
        written = doc.get(table, {})
        for key, attr in fields.items():
            source = f"{config.path} [{table}]" if key in written else "default"
            value = written[key] if table == "network" and key in written else _get(config, attr)
            rows.append((f"{table}.{key}", value, source))
    files = doc.get("models", {})
    for name in sorted(config.models):
        if name not in files:
            rows.append((f"models.{name}", config.models[name].model, "built-in"))
            continue
        for key in sorted(files[name]):
            rows.append((f"models.{name}.{key}", files[name][key], f"{config.path} [models.{name}]"))
    for name, table in sorted(doc.get("mcp", {}).items()):
        for key in sorted(table):
            rows.append((f"mcp.{name}.{key}", table[key], f"{config.path} [mcp.{name}]"))
    return rows
