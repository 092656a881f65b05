"""No import circle between the modules of src (issue 22): type-only imports count too, since a
circle there is the same tangle of concepts; a package's ``__init__`` importing its own modules is
its face, not a circle."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    files = {_module(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        out: set[str] = set()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                if t in files:
                    out.add(t)
                    break  # the submodule named, else the module itself
        out.discard(name)
        if path.name == "__init__.py":
            out = {t for t in out if not t.startswith(package + ".")}  # its face
        graph[name] = {t for t in out if t.startswith("nodwyn")}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                found.append([*stack[stack.index(m) :], m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)
    return found


# Circles to untangle; the list only shrinks: a circle not listed fails, a listed one gone fails too.
KNOWN: set[tuple[str, ...]] = set()


def test_no_module_of_src_imports_itself_round_a_circle() -> None:
    found = {tuple(sorted(set(c))) for c in _circles(_graph())}
    new = sorted(found - KNOWN)
    assert not new, "import circles:\n" + "\n".join(" <-> ".join(c) for c in new)
    assert not KNOWN - found, f"untangled, remove from KNOWN: {sorted(KNOWN - found)}"


def test_a_circle_is_found() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
