"""Composition, above the agent: the config file, extension files, the probe of a model entry, and
``setup.open_agent``, which puts a session's log, window, tools and backends together into an
``Agent``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nodwyn import lazy

if TYPE_CHECKING:
    from nodwyn.compose.config import (
        APPROVALS,
        Config,
        config_path,
        edit_model,
        keychain_path,
        load_config,
        model_from_table,
        set_control,
        toml_value,
        write_cache_asks,
    )
    from nodwyn.compose.config_keys import effective
    from nodwyn.compose.extensions import trust
    from nodwyn.compose.presets import all_presets, entry_for
    from nodwyn.compose.probe import context_line, probe_model, probe_servers, published_context, report
    from nodwyn.compose.setup import Opened, backends, held_values, keychain_where, open_agent, seal_key

__all__ = [
    "APPROVALS", "Config", "Opened", "all_presets", "backends", "config_path", "context_line", "edit_model",
    "effective", "entry_for", "held_values", "keychain_path", "keychain_where", "load_config",
    "model_from_table", "open_agent", "probe_model", "probe_servers", "published_context", "report",
    "seal_key", "set_control", "toml_value", "trust", "write_cache_asks",
]  # fmt: skip

__getattr__ = lazy(__name__, {
    "config": "APPROVALS Config config_path edit_model keychain_path load_config "
        "model_from_table set_control toml_value write_cache_asks",
    "config_keys": "effective", "extensions": "trust", "presets": "all_presets entry_for",
    "probe": "context_line probe_model probe_servers published_context report",
    "setup": "Opened backends held_values keychain_where open_agent seal_key",
})  # fmt: skip
