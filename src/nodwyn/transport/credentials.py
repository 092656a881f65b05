"""Credentials, each bound to the origins it may reach.

A credential comes from an environment mapping the caller passes in (never ``os.environ`` read
here) or from a keychain file that only its owner may read (mode 0600). Each one names the
origins (scheme, host, port) it may be sent to; :meth:`Credential.check` refuses any other
before a byte leaves the process. The value is never in a repr, a log line or an error message:
errors name the credential, never what it holds.

Keychain file (JSON)::

    {"credentials": {
        "openai-plan": {"value": "...", "origins": ["https://api.openai.com"],
                        "scopes": ["chatgpt.tokens.use.direct"], "header": "authorization"},
        "anthropic": {"value": "...", "origins": ["https://api.anthropic.com"]}}}

``scopes`` come from the token response the sign-in stored; ``chatgpt.tokens.use.direct`` marks
a ChatGPT plan's credential (:attr:`Credential.plan_usage`).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from nodwyn.errors import ConfigError, NotFoundError, OriginError
from nodwyn.values.model import ModelEntry

PLAN_SCOPE = "chatgpt.tokens.use.direct"
_DEFAULT_PORTS = {"http": 80, "https": 443}

Header = Literal["authorization", "x-api-key"]


def origin_of(url: str) -> str:
    """``scheme://host:port`` of a URL, lower-cased, with the scheme's default port made explicit."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # e.g. "Invalid IPv6 URL" for http://[::1
        raise ConfigError(f"{url!r} is not a valid URL ({exc}); give e.g. https://api.example.com") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ConfigError(f"{url!r} is not an http(s) URL with a host; give e.g. https://api.example.com")
    try:
        port = parts.port or _DEFAULT_PORTS[scheme]
    except ValueError as exc:
        raise ConfigError(f"{url!r} has an invalid port: {exc}") from exc
    return f"{scheme}://{parts.hostname.lower()}:{port}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Credential:
    """A named secret, the origins it may reach and the scopes it was granted."""

    name: str
    value: str = field(repr=False)
    origins: frozenset[str]
    scopes: frozenset[str] = frozenset()
    header: Header | None = None  # None: the API's usual header (x-api-key for Anthropic, else bearer)

    def __post_init__(self) -> None:
        if not self.value:
            raise ConfigError(f"credential {self.name!r} is empty; set its value or remove it")
        if not self.origins:
            raise ConfigError(
                f"credential {self.name!r} names no origin it may reach; add e.g. "
                '"origins": ["https://api.example.com"]'
            )
        for origin in self.origins:
            if origin_of(origin) != origin:
                raise ConfigError(f"credential {self.name!r}: origin {origin!r} is not normalised")

    @property
    def plan_usage(self) -> bool:
        """Whether the credential was granted ChatGPT plan usage (the Codex session headers go too)."""
        return PLAN_SCOPE in self.scopes

    def check(self, url: str) -> None:
        """Refuse, before anything is sent, a URL outside the credential's origins."""
        origin = origin_of(url)
        if origin not in self.origins:
            allowed = ", ".join(sorted(self.origins))
            raise OriginError(
                f"credential {self.name!r} may reach only {allowed}, not {origin}; "
                "bind it to that origin in the keychain or use another credential"
            )

    def auth_headers(self, usual: str = "authorization") -> dict[str, str]:
        """The credential's headers: its own header if it names one, else ``usual`` (a model API's
        profile's ``auth_header``; an MCP server takes the default, a bearer token)."""
        header = self.header or usual
        if header == "x-api-key":
            return {"x-api-key": self.value}
        return {"authorization": f"Bearer {self.value}"}


def _origins(name: str, raw: Any) -> frozenset[str]:
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list | tuple | frozenset | set) or not all(isinstance(o, str) for o in raw):
        raise ConfigError(f"credential {name!r}: origins must be a list of URLs")
    return frozenset(origin_of(o) for o in raw)


@dataclass(frozen=True, slots=True)
class Credentials:
    """The credentials a backend may use, by name."""

    by_name: Mapping[str, Credential] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Credentials({sorted(self.by_name)})"

    def get(self, name: str) -> Credential:
        try:
            return self.by_name[name]
        except KeyError:
            known = ", ".join(sorted(self.by_name)) or "none"
            raise NotFoundError(
                f"credential {name!r} is not configured (known: {known}); "
                "set its environment variable or add it to the keychain"
            ) from None

    def merged(self, other: Credentials) -> Credentials:
        """These credentials and ``other``'s; ``other`` wins a name both hold."""
        return Credentials({**self.by_name, **other.by_name})

    @classmethod
    def of(cls, creds: Iterable[Credential]) -> Credentials:
        return cls({c.name: c for c in creds})

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str],
        bindings: Mapping[str, Iterable[str]],
        *,
        scopes: Mapping[str, Iterable[str]] | None = None,
    ) -> Credentials:
        """Credentials named by environment variables, each bound to the origins ``bindings`` gives.

        ``env`` is passed in by the caller (the CLI passes ``os.environ``); a variable that is
        unset is skipped, so a model that needs it fails later with its name.
        """
        return cls.of(
            Credential(
                name=name,
                value=env[name],
                origins=_origins(name, list(origins)),
                scopes=frozenset((scopes or {}).get(name, ())),
            )
            for name, origins in bindings.items()
            if env.get(name)
        )

    @classmethod
    def from_env_for_models(cls, env: Mapping[str, str], models: Iterable[ModelEntry]) -> Credentials:
        """Environment credentials, each bound to the origins of the model entries that name it.

        The person's config.toml says which address each model is at and which credential it
        uses; that is the binding. A model entry without a ``base_url`` binds nothing.
        """
        bindings: dict[str, set[str]] = {}
        for m in models:
            if m.credential is not None and m.base_url:
                bindings.setdefault(m.credential, set()).add(m.base_url)
        return cls.from_env(env, {name: sorted(urls) for name, urls in bindings.items()})

    @classmethod
    def from_keychain(cls, path: Path) -> Credentials:
        """Read a keychain file; refuse one that others may read or write."""
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            raise NotFoundError(f"keychain {path} does not exist; create it with mode 0600") from None
        if stat.S_IMODE(mode) & 0o077:
            raise ConfigError(
                f"keychain {path} has mode {stat.S_IMODE(mode):04o}, readable by others; run chmod 600 {path}"
            )
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError) as exc:
            # The message of a JSON error may quote the file's text, which holds secrets: name only where.
            where = f" at line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else ""
            raise ConfigError(f"keychain {path} is not valid JSON{where}; fix or recreate it") from None
        entries = data.get("credentials") if isinstance(data, dict) else None
        if not isinstance(entries, dict):
            raise ConfigError(f'keychain {path} has no "credentials" object')
        found = []
        for name, entry in entries.items():
            if not isinstance(entry, dict) or not isinstance(entry.get("value"), str):
                raise ConfigError(f'keychain {path}: credential {name!r} needs a string "value"')
            header = entry.get("header")
            if header not in (None, "authorization", "x-api-key"):
                raise ConfigError(
                    f'keychain {path}: credential {name!r} header must be "authorization" or "x-api-key"'
                )
            raw_scopes = entry.get("scopes", [])
            if isinstance(raw_scopes, str):  # a token response's space-separated scope string
                raw_scopes = raw_scopes.split()
            if not isinstance(raw_scopes, list) or not all(isinstance(s, str) for s in raw_scopes):
                raise ConfigError(f"keychain {path}: credential {name!r} scopes must be a list of strings")
            found.append(
                Credential(
                    name=name,
                    value=entry["value"],
                    origins=_origins(name, entry.get("origins", [])),
                    scopes=frozenset(raw_scopes),
                    header=header,
                )
            )
        return cls.of(found)


def write_keychain(path: Path, entries: Mapping[str, Mapping[str, Any]]) -> None:
    """Create (or replace) a keychain file with mode 0600 from the start."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        os.fchmod(fh.fileno(), 0o600)
        json.dump({"credentials": entries}, fh, indent=2)


def entry_json(credential: Credential) -> dict[str, Any]:
    """A credential as its keychain entry."""
    entry: dict[str, Any] = {"value": credential.value, "origins": sorted(credential.origins)}
    if credential.scopes:
        entry["scopes"] = sorted(credential.scopes)
    if credential.header is not None:
        entry["header"] = credential.header
    return entry


SEAL_MEMBER = "seal"  # the keychain's session-seal secret (log/seal.py, ADR 0336), beside "credentials"


def seal_secret(path: Path) -> str | None:
    """The keychain's session-seal secret, if it holds one (the file checked as for credentials)."""
    if not path.exists():
        return None
    Credentials.from_keychain(path)  # the same refusals: others may read it, not JSON
    data = json.loads(path.read_bytes())
    secret = data.get(SEAL_MEMBER) if isinstance(data, dict) else None
    if secret is not None and (not isinstance(secret, str) or len(secret) < 32):
        raise ConfigError(
            f'keychain {path}: "{SEAL_MEMBER}" must be a string of 32 or more characters; '
            "remove it and run `nodwyn keys seal`"
        )
    return secret


def _kept_members(path: Path) -> dict[str, Any]:
    """What a keychain holds besides its credentials (the seal secret), kept when it is rewritten."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return {SEAL_MEMBER: data[SEAL_MEMBER]} if isinstance(data, dict) and SEAL_MEMBER in data else {}


def save_keychain(path: Path, credentials: Credentials, *, seal: str | None = None) -> None:
    """Write the keychain whole: a temporary file created with mode 0600 beside it, then renamed
    over it, so the file is never readable by others nor half written. Its seal secret is kept
    (``seal`` sets one)."""
    kept = _kept_members(path)
    if seal is not None:
        kept[SEAL_MEMBER] = seal
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as fh:
            os.fchmod(fh.fileno(), 0o600)
            entries = {name: entry_json(c) for name, c in sorted(credentials.by_name.items())}
            json.dump({"credentials": entries, **kept}, fh, indent=2)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def new_credential(
    name: str, value: str, origins: Iterable[str], scopes: Iterable[str] = (), header: str | None = None
) -> Credential:
    """A credential from what a person typed: origins normalised, the header checked."""
    if header not in (None, "authorization", "x-api-key"):
        raise ConfigError(
            f'credential {name!r}: header must be "authorization" or "x-api-key", not {header!r}'
        )
    return Credential(
        name=name,
        value=value,
        origins=_origins(name, list(origins)),
        scopes=frozenset(scopes),
        header=header,  # type: ignore[arg-type]
    )
