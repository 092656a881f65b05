"""Fake providers: loopback HTTP servers speaking each API with a modelled prompt cache.

``from nodwyn.fakes import FakeServer``; the server module is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nodwyn import lazy

if TYPE_CHECKING:
    from nodwyn.fakes.base import ReceivedRequest
    from nodwyn.fakes.script import ITEM_KEYS, load_script
    from nodwyn.fakes.server import DEFAULT_CACHE, HANDLERS, FakeApi, FakeServer

__all__ = [
    "DEFAULT_CACHE", "HANDLERS", "ITEM_KEYS", "FakeApi", "FakeServer", "ReceivedRequest", "load_script",
]  # fmt: skip

__getattr__ = lazy(__name__, {
    "base": "ReceivedRequest", "script": "ITEM_KEYS load_script",
    "server": "DEFAULT_CACHE HANDLERS FakeApi FakeServer",
})  # fmt: skip
