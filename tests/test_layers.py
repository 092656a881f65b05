"""The architecture as a test: imports flow downward, and the pure layers do no I/O."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "nodwyn"

# layer -> layers it may import (besides itself, nodwyn.errors and nodwyn.values)
ALLOWED: dict[str, set[str]] = {
    "values": set(),
    "log": set(),
    "window": set(),
    "dialects": set(),
    "stats": set(),
    "transport": {"dialects"},
    "record": {"log", "window"},
    "replay": {"log", "window"},
    "fakes": {"log"},
    "agent": {"log", "window", "record", "replay", "dialects", "transport", "stats"},
    "console": {"log", "window", "record", "replay", "stats", "agent"},
    "export": {"log", "replay", "stats", "console"},
    "testing": {"log", "window", "record", "transport", "fakes"},
    "cli": {
        "log",
        "window",
        "record",
        "replay",
        "dialects",
        "transport",
        "agent",
        "stats",
        "fakes",
        "console",
        "export",
    },
}
PURE = {"values", "window", "dialects", "stats"}
# Modules that reach the disk, the network, the clock, the environment or other processes.
IMPURE_MODULES = {
    "os",
    "pathlib",
    "io",
    "socket",
    "subprocess",
    "time",
    "datetime",
    "httpx",
    "urllib.request",
    "shutil",
    "tempfile",
    "random",
    "threading",
    "asyncio",
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _layer_files() -> list[tuple[str, Path]]:
    out = []
    for layer in ALLOWED:
        folder = SRC / layer
        out.extend((layer, p) for p in sorted(folder.rglob("*.py")))
    return out


@pytest.mark.parametrize(("layer", "path"), _layer_files(), ids=lambda v: str(v))
def test_imports_flow_downward(layer: str, path: Path) -> None:
    for name in _imports(path):
        if not name.startswith("nodwyn."):
            continue
        target = name.split(".")[1]
        if target in {layer, "errors", "values"}:
            continue
        assert target in ALLOWED[layer], f"{path.relative_to(SRC)} ({layer}) imports {name}"


@pytest.mark.parametrize(
    ("layer", "path"), [lp for lp in _layer_files() if lp[0] in PURE], ids=lambda v: str(v)
)
def test_pure_layers_do_no_io(layer: str, path: Path) -> None:
    bad = {n for n in _imports(path) if n in IMPURE_MODULES or n.split(".")[0] in {"httpx", "socket"}}
    assert not bad, f"{path.relative_to(SRC)} is in the pure {layer} layer but imports {sorted(bad)}"
