"""Serving the console with uvicorn, on a loopback address unless told otherwise."""

from __future__ import annotations

import ipaddress

from nodwyn.errors import ConfigError


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_host(host: str, *, allow_remote: bool) -> None:
    """Refuse a non-loopback interface unless ``allow_remote``: the console has no login."""
    if not is_loopback(host) and not allow_remote:
        raise ConfigError(
            f"console host {host!r} is not a loopback address and the console has no login; "
            "use 127.0.0.1, or pass --allow-remote to serve every session on that interface"
        )
