"""nodwyn: an LLM agent runtime built on context and cache discipline."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """A package face's ``__getattr__`` (PEP 562) that imports a public name's module when the name
    is first used, so naming a heavy package costs nothing until then. ``modules`` maps a module of
    the package (``"setup"``, ``"tools.base"``) to the names the face takes from it, space-separated;
    the face lists the same imports under ``TYPE_CHECKING`` (``tests/test_layers.py`` checks both)."""
    home = {name: module for module, names in modules.items() for name in names.split()}

    def __getattr__(name: str) -> Any:
        if name not in home:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
