"""How long and how much the HTTP transport waits for and takes from a provider (ADR 0140).

``[network]`` in config.toml sets these; the defaults suit a remote provider whose model may think
for minutes while its server sends only keep-alive comments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

MIB: Final = 1 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class NetworkLimits:
    """Deadlines in seconds, the retry count and the largest reply, for one ``send``.

    ``connect_timeout``: to open the connection (a refused one fails at once, never retried).
    ``idle_timeout``: the longest wait for any byte, headers included.
    ``progress_timeout``: the longest wait for a stream *event*; SSE comments (keep-alives such as
    ``: OPENROUTER PROCESSING``) are bytes but not progress, so they cannot hold a request forever.
    ``reply_timeout``: the whole send, every retry and wait included.
    ``max_reply_bytes``: the most a reply's body may bring (after decompression).
    """

    connect_timeout: float = 10.0
    idle_timeout: float = 120.0
    progress_timeout: float = 300.0
    reply_timeout: float = 900.0
    max_retries: int = 4
    max_reply_bytes: int = 64 * MIB

    def __post_init__(self) -> None:
        for name in ("connect_timeout", "idle_timeout", "progress_timeout", "reply_timeout"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 0 < value < float("inf")):
                raise ValueError(f"{name} must be a positive finite number of seconds, got {value!r}")
        if self.max_retries < 0 or self.max_reply_bytes < 1:
            raise ValueError("max_retries must be >= 0 and max_reply_bytes >= 1")


# the keys of [network] and their units, as config.toml spells them
NETWORK_KEYS: Final = (
    "connect_timeout",
    "idle_timeout",
    "progress_timeout",
    "reply_timeout",
    "max_retries",
    "max_reply_mb",
)
