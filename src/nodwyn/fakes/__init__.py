"""Fake providers: loopback HTTP servers speaking each API with a modelled prompt cache.

``from nodwyn.fakes import FakeServer``; the server module is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nodwyn.fakes.server import FakeApi, FakeServer

__all__ = ["FakeApi", "FakeServer"]


def __getattr__(name: str) -> Any:
    if name == "FakeServer":
        from nodwyn.fakes.server import FakeServer

        return FakeServer
    if name == "FakeApi":
        from nodwyn.fakes.server import FakeApi

        return FakeApi
    raise AttributeError(name)
