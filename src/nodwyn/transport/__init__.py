"""Transports: HTTP model servers (``http.HttpBackend``), credentials bound to origins, the local model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nodwyn import lazy

if TYPE_CHECKING:
    from nodwyn.transport.backend import Backend
    from nodwyn.transport.credentials import (
        Credentials,
        new_credential,
        origin_of,
        save_keychain,
        seal_secret,
    )
    from nodwyn.transport.http import HttpBackend
    from nodwyn.transport.limits import MIB, NETWORK_KEYS, NetworkLimits
    from nodwyn.transport.local import LocalBackend
    from nodwyn.transport.weights import WEIGHTS, weights_for

__all__ = [
    "MIB", "NETWORK_KEYS", "WEIGHTS", "Backend", "Credentials", "HttpBackend", "LocalBackend",
    "NetworkLimits", "new_credential", "origin_of", "save_keychain", "seal_secret", "weights_for",
]  # fmt: skip

__getattr__ = lazy(__name__, {
    "backend": "Backend", "credentials": "Credentials new_credential origin_of save_keychain seal_secret",
    "http": "HttpBackend", "limits": "MIB NETWORK_KEYS NetworkLimits", "local": "LocalBackend",
    "weights": "WEIGHTS weights_for",
})  # fmt: skip
