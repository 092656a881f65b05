"""Provider presets: the keys of a ``[models.NAME]`` entry for a known provider, read as data from
``presets.toml`` (issue 26, item 3; ADR 0382). ``model`` and ``context_size`` are the person's to
give; any other key may be overridden."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from importlib.resources import files
from typing import Any

from nodwyn.errors import ConfigError, did_you_mean

PERSONAL = {  # never in a preset: the person gives them, as these say
    "model": "the model id on the wire, e.g. model=z-ai/glm-5.3-flash",
    "context_size": "the model's context window in tokens from its provider's page, e.g. "
    "context_size=131072 (never guessed from the name)",
}


def all_presets() -> dict[str, dict[str, Any]]:
    """Every preset by name, each with its ``about`` line and its entry keys."""
    doc = tomllib.loads(files("nodwyn.compose").joinpath("presets.toml").read_text("utf-8"))
    return {name: dict(table) for name, table in doc.items()}


def entry_for(preset: str, given: Mapping[str, str]) -> dict[str, str]:
    """The whole entry: the preset's keys under the ``given`` ones (KEY=VALUE from the command line);
    refused without ``model`` or ``context_size``, which a preset never supplies."""
    known = all_presets()
    if preset not in known:
        raise ConfigError(
            f"no preset {preset!r}{did_you_mean(preset, known)}; presets: {', '.join(sorted(known))} "
            "(`nodwyn models presets`)"
        )
    keys = {k: str(v) for k, v in known[preset].items() if k != "about"}
    entry = {**keys, **given}
    for key, what in PERSONAL.items():
        if key not in entry:
            raise ConfigError(f"preset {preset!r} needs {key}=...: {what}")
    return entry
