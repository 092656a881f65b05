"""The shell tool's environment: the person's, without credentials.

Whatever a command prints goes into the log and back to the provider, so ``env`` must show no key.
A variable is left out when its name is one a model entry or the keychain names as a credential,
when its name looks like a secret's (``*_API_KEY``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ...),
or when its value holds a credential nodwyn holds or a known credential shape. The person may let a
variable through by name: ``[tools] shell_env = ["GITHUB_TOKEN"]`` (ADR 0122).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from nodwyn.log import redact

_SECRET_NAME = re.compile(
    r"API_?KEY|ACCESS_?KEY|AUTH_?KEY|PRIVATE_?KEY|SIGNING_?KEY|SECRET|TOKEN|PASSWORD|PASSWD|PASSPHRASE"
    r"|CREDENTIAL|COOKIE|(?:^|_)(?:KEY|PAT|PWD_HASH|DSN)$|^DATABASE_URL$|_AUTH$|^AUTH_|WEBHOOK",
    re.IGNORECASE,
)
_KEEP = frozenset({"PWD", "OLDPWD", "TOKENIZERS_PARALLELISM"})  # names the patterns must never catch
_URL_PASSWORD = re.compile(r"://[^/\s:@]+:[^/\s@]+@")


def secret_name(name: str) -> bool:
    """Whether a variable's name says it holds a secret."""
    return name not in _KEEP and _SECRET_NAME.search(name) is not None


def scrub_env(
    env: Mapping[str, str],
    *,
    credential_names: Iterable[str] = (),
    credential_values: Iterable[str] = (),
    allow: Iterable[str] = (),
) -> dict[str, str]:
    """``env`` without its credentials (see the module docstring); ``allow`` names pass as they are."""
    named = set(credential_names)
    values = [v for v in credential_values if len(v) >= 8]
    allowed = set(allow)
    return {k: v for k, v in env.items() if k in allowed or not _is_secret(k, v, named, values)}


def _is_secret(name: str, value: str, named: set[str], values: list[str]) -> bool:
    if name in named or secret_name(name) or any(v in value for v in values) or _URL_PASSWORD.search(value):
        return True
    return bool(redact(value)[0] != value)
