"""Where nodwyn keeps its data. The environment is passed in; nothing here reads it by itself."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from nodwyn.errors import ConfigError


def data_root(env: Mapping[str, str]) -> Path:
    """``NODWYN_HOME``, else ``$XDG_DATA_HOME/nodwyn``, else ``~/.local/share/nodwyn`` (``HOME`` from env)."""
    home = env.get("NODWYN_HOME")
    if home:
        return Path(home)
    xdg = env.get("XDG_DATA_HOME")
    if xdg and Path(xdg).is_absolute():  # the XDG spec says to ignore a relative value
        return Path(xdg) / "nodwyn"
    user_home = env.get("HOME")
    if not user_home:
        raise ConfigError("no data directory: set NODWYN_HOME (or XDG_DATA_HOME or HOME) in the environment")
    return Path(user_home) / ".local" / "share" / "nodwyn"


def sessions_dir(root: Path) -> Path:
    """The folder holding one folder per session."""
    return root / "sessions"
