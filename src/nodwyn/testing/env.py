"""A person's environment with nothing of the real one: home, data root, config and XDG config all
under one folder, so a session a test or benchmark runs reads and writes only there."""

from __future__ import annotations

from pathlib import Path


def isolated_env(root: Path, **extra: str) -> dict[str, str]:
    """``HOME`` = ``root``, sessions under ``root/home``, ``root/config.toml`` as config.toml (and
    the keychain beside it), ``root/cfg`` as ``XDG_CONFIG_HOME``; ``extra`` adds variables
    (``PATH=...`` for a CLI started as a process, ``WS=...``, credentials)."""
    return {
        "HOME": str(root),
        "NODWYN_HOME": str(root / "home"),
        "NODWYN_CONFIG": str(root / "config.toml"),
        "XDG_CONFIG_HOME": str(root / "cfg"),
        **extra,
    }
