"""The sandbox and the approval mode a session runs with, from config.toml and the command line.

``sandbox_for`` makes the shell's ``agent.sandbox.Sandbox``: the mode (``--sandbox`` over
``[tools] sandbox``; never a repository's setting), the network, ``.git``, and the paths it hides:
nodwyn's config dir, keychain, data dir and cache (sessions, attachments, KV states), the person's
credential stores and every path ``[tools] hidden`` lists (ADR 0351). ``approval_for`` settles the
approval mode (``--yes`` is ``full-auto``) and refuses ``full-auto`` without a sandbox unless the
person also passed ``--dangerously-no-sandbox`` (ADR 0353).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import cast

from nodwyn.agent import MODES, Mode, Sandbox, find_bwrap
from nodwyn.compose.config import APPROVALS, Config, cache_dir, config_dir, config_path, keychain_path
from nodwyn.errors import ConfigError
from nodwyn.log import data_root

# The person's credential stores, relative to HOME: never visible to a sandboxed command.
CREDENTIAL_STORES = (
    ".ssh",
    ".aws",
    ".config/gcloud",
    ".azure",
    ".kube",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".config/gh",
    ".docker/config.json",
    ".npmrc",
    ".pypirc",
)


def hidden_paths(env: Mapping[str, str], config: Config) -> tuple[Path, ...]:
    """What a sandboxed command must not see, as written (``Sandbox`` resolves and skips the missing)."""
    home = Path(env.get("HOME", "~")).expanduser()
    found = [config_dir(env), config_path(env), keychain_path(env), cache_dir(env)]
    with contextlib.suppress(ConfigError):  # no data dir named: nothing to hide
        found.append(data_root(env))
    found += [home / p for p in CREDENTIAL_STORES]
    for named in config.hidden:
        path = Path(named[2:] if named.startswith("~/") else named)
        found.append(home / path if named.startswith("~/") or not path.is_absolute() else path)
    return tuple(dict.fromkeys(found))


def sandbox_for(env: Mapping[str, str], config: Config, mode: str | None = None) -> Sandbox:
    """The shell's sandbox: ``mode`` (``--sandbox``) over ``[tools] sandbox``."""
    chosen = config.sandbox if mode is None else mode
    if chosen not in MODES:
        raise ConfigError(f"--sandbox {chosen!r}: use one of {', '.join(MODES)}")
    return Sandbox(
        mode=cast("Mode", chosen),
        network=config.sandbox_network,
        git_writable=config.git_writable,
        hidden=hidden_paths(env, config),
        program=find_bwrap(env.get("PATH")),
    )


def approval_for(
    config: Config, sandbox: Sandbox, *, asked: str | None, yes: bool, dangerously_no_sandbox: bool
) -> str:
    """The approval mode: ``--yes`` (full-auto), else ``--approval``, else ``[tools] approval``."""
    chosen = "full-auto" if yes else asked or config.approval
    if chosen not in APPROVALS:
        raise ConfigError(f"--approval {chosen!r}: use one of {', '.join(APPROVALS)}")
    if chosen == "full-auto" and not sandbox.confined and not dangerously_no_sandbox:
        raise ConfigError(
            "full-auto approval (--yes) with the sandbox off would run every command unconfined "
            "without asking; choose a sandbox (--sandbox workspace-write), drop --yes, or pass "
            "--dangerously-no-sandbox as well"
        )
    return chosen
