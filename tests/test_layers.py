"""The architecture as a test: layers have ranks, a module imports only layers of lower rank, and
the pure layers do no I/O.

``RANKS`` is the one order of the layers (AGENTS.md lists the packages in it). ``ALLOWED`` is
exactly the set of imports between layers that exist today: each must go down the ranks, and a
new one is added here on purpose (the test names it) or the import is wrong. ``errors`` and
``values`` sit at the bottom and every layer may import them without a line in the table.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "nodwyn"

# Lowest first. A layer may import a layer only if that layer comes earlier here.
RANKS: tuple[str, ...] = (
    "errors",
    "values",
    "window",
    "dialects",
    "stats",
    "whatif",
    "log",
    "record",
    "imports",
    "replay",
    "transport",
    "fakes",
    "agent",
    "mcp",
    "compose",
    "evals",
    "testing",
    "console",
    "export",
    "cli",
    "tui",
)
RANK = {layer: i for i, layer in enumerate(RANKS)}
BASE = {"errors", "values"}  # any layer may import these; they are not listed in ALLOWED
PURE = {"values", "window", "dialects", "stats", "whatif"}

# Every import between layers that exists (importer -> imported), besides imports of BASE.
ALLOWED: dict[str, frozenset[str]] = {
    "whatif": frozenset({"window", "stats"}),
    "transport": frozenset({"dialects"}),
    "record": frozenset({"log", "window"}),
    "imports": frozenset({"log", "record"}),
    "replay": frozenset({"stats", "log", "window", "imports"}),
    "agent": frozenset({"window", "dialects", "log", "record", "transport"}),
    "mcp": frozenset({"log", "agent"}),
    "compose": frozenset({"window", "dialects", "log", "record", "transport", "agent", "mcp"}),
    "evals": frozenset({"stats", "log", "replay"}),
    "testing": frozenset({"window", "log", "record", "transport", "fakes"}),
    "console": frozenset({"stats", "log", "replay", "evals"}),
    "export": frozenset({"stats", "replay"}),
    "cli": frozenset(
        {
            "stats",
            "whatif",
            "log",
            "imports",
            "replay",
            "transport",
            "fakes",
            "agent",
            "compose",
            "evals",
            "console",
            "export",
        }
    ),
    "tui": frozenset({"stats", "log", "agent", "compose", "cli"}),
}

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


def module_of(path: Path) -> str:
    """``src/nodwyn/log/store.py`` -> ``nodwyn.log.store``; a package's ``__init__`` is the package."""
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> str | None:
    """``nodwyn.log.store`` -> ``log``; ``nodwyn`` itself belongs to no layer."""
    parts = module.split(".")
    return parts[1] if parts[0] == "nodwyn" and len(parts) > 1 else None


def imports_of(text: str, module: str, *, is_package: bool = False) -> set[str]:
    """Every module ``text`` imports, anywhere in it (function-level imports too), relative
    imports resolved against ``module``."""
    names: set[str] = set()
    package = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:
                up = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                base = ".".join([*up, *([node.module] if node.module else [])])
            names.add(base)
            if node.level and not node.module:  # from . import x: x is a module of the package
                names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def problems(
    module: str, text: str, allowed: dict[str, frozenset[str]], *, is_package: bool = False
) -> list[str]:
    """Why ``module`` (whose source is ``text``) breaks the layering: an import of a layer of equal
    or higher rank, of a layer with no rank, or of a layer not in ``allowed`` for it."""
    own = layer_of(module)
    if own is None:
        return []
    if own not in RANK:
        return [f"{module}: layer {own!r} has no rank; add it to RANKS in tests/test_layers.py"]
    out = []
    for name in sorted(imports_of(text, module, is_package=is_package)):
        target = layer_of(name)
        if target is None or target == own:
            continue
        if target not in RANK:
            out.append(f"{module} imports {name}: layer {target!r} has no rank")
        elif RANK[target] >= RANK[own]:
            out.append(
                f"{module} imports {name}: {own} (rank {RANK[own]}) may import only lower ranks, "
                f"and {target} has rank {RANK[target]}"
            )
        elif target not in BASE and target not in allowed.get(own, frozenset()):
            out.append(
                f"{module} imports {name}: the edge {own} -> {target} is new; add it to ALLOWED "
                "in tests/test_layers.py if it is meant"
            )
    return out


def table_problems(allowed: dict[str, frozenset[str]]) -> list[str]:
    """Entries of an ALLOWED table that go up or sideways, or name an unranked layer."""
    out = []
    for own, targets in allowed.items():
        for target in sorted(targets):
            if own not in RANK or target not in RANK:
                out.append(f"{own} -> {target}: a layer without a rank")
            elif RANK[target] >= RANK[own]:
                out.append(
                    f"{own} -> {target}: {target} (rank {RANK[target]}) is not below {own} ({RANK[own]})"
                )
    return out


def _files() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def existing_edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in _files():
        module = module_of(path)
        own = layer_of(module)
        if own is None:
            continue
        for name in imports_of(path.read_text(), module, is_package=path.name == "__init__.py"):
            target = layer_of(name)
            if target is not None and target != own and target not in BASE:
                edges.setdefault(own, set()).add(target)
    return edges


# -- the source tree -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_go_down_the_ranks(path: Path) -> None:
    found = problems(module_of(path), path.read_text(), ALLOWED, is_package=path.name == "__init__.py")
    assert not found, "\n".join(found)


def test_the_table_goes_down_the_ranks() -> None:
    assert table_problems(ALLOWED) == []


def test_the_table_lists_only_edges_that_exist() -> None:
    edges = existing_edges()
    stale = sorted(
        f"{own} -> {t}" for own, ts in ALLOWED.items() for t in ts if t not in edges.get(own, set())
    )
    assert not stale, f"ALLOWED lists imports nothing makes; remove them: {stale}"


def test_every_package_has_a_rank() -> None:
    layers = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    layers |= {p.stem for p in SRC.glob("*.py") if p.name != "__init__.py"}
    assert layers - set(RANKS) == set(), "a new package needs a place in RANKS"


def test_pure_layers_rank_below_every_io_layer() -> None:
    """So a pure layer cannot import one that does I/O, whatever the table says."""
    top_pure = max(RANK[p] for p in PURE)
    io_layers = [x for x in RANKS if x not in PURE | {"errors"}]
    assert all(RANK[x] > top_pure for x in io_layers), io_layers


def test_agents_md_lists_the_packages_in_rank_order() -> None:
    text = (ROOT / "AGENTS.md").read_text()
    layout = text.split("## Layout", 1)[1].split("```", 2)[1]
    listed = [m.group(1) for m in re.finditer(r"^  (\w+)(?:/|\.py)\s", layout, re.M)]
    ranked = [x for x in listed if x in RANK]
    assert ranked == sorted(ranked, key=RANK.__getitem__), ranked
    present = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert present <= set(listed), f"AGENTS.md's layout misses {sorted(present - set(listed))}"


@pytest.mark.parametrize("path", [p for p in _files() if layer_of(module_of(p)) in PURE], ids=str)
def test_pure_layers_do_no_io(path: Path) -> None:
    names = imports_of(path.read_text(), module_of(path))
    bad = {n for n in names if n in IMPURE_MODULES or n.split(".")[0] in {"httpx", "socket"}}
    assert not bad, f"{path.relative_to(SRC)} is in a pure layer but imports {sorted(bad)}"


# -- the checker itself: it must fail on a wrong import ------------------------------------------


@pytest.mark.parametrize(
    ("module", "text", "says"),
    [
        # a pure layer reaching up to the log
        ("nodwyn.stats.diagnosis", "from nodwyn.log import SessionLog\n", "may import only lower ranks"),
        # the console reaching up to the CLI
        ("nodwyn.console.views", "import nodwyn.cli.common\n", "may import only lower ranks"),
        # hidden in a function, and relative
        ("nodwyn.window.build", "def f():\n    from ..agent import loop\n", "may import only lower ranks"),
        ("nodwyn.dialects.local", "from ...transport import local\n", "may import only lower ranks"),
        # sideways: two layers of one rank do not exist, so replay -> record goes up
        ("nodwyn.record.recorder", "from nodwyn.replay.exact import replay_request\n", "rank"),
        # downward, but not an edge anything makes today
        ("nodwyn.fakes.server", "from nodwyn.log import Store\n", "the edge fakes -> log is new"),
        # a package nobody ranked
        ("nodwyn.plugins.x", "import nodwyn.values\n", "has no rank"),
        ("nodwyn.agent.loop", "from nodwyn.plugins import x\n", "has no rank"),
    ],
)
def test_the_checker_fails_on_a_wrong_import(module: str, text: str, says: str) -> None:
    found = problems(module, text, ALLOWED, is_package=module == "nodwyn.dialects.local")
    assert found and says in found[0], found


def test_the_checker_passes_what_the_ranks_and_table_allow() -> None:
    assert problems("nodwyn.transport.http", "from nodwyn.dialects import dialect_for\n", ALLOWED) == []
    assert (
        problems("nodwyn.stats.cost", "from nodwyn.values.model import Prices\nimport orjson\n", ALLOWED)
        == []
    )
    assert problems("nodwyn.log.store", "from . import paths\nfrom .lock import Lock\n", ALLOWED) == []


def test_a_table_edge_that_goes_up_is_refused() -> None:
    up = f"log -> agent: agent (rank {RANK['agent']}) is not below log ({RANK['log']})"
    assert table_problems({"log": frozenset({"agent"})}) == [up]
    assert table_problems({"stats": frozenset({"stats"})})  # sideways is not down


# -- faces: other packages import a package only through its __init__ (issue 22) ----------------

VOCABULARY = "values"  # the shared vocabulary, imported by module from anywhere


def _faces() -> list[Path]:
    return sorted(p / "__init__.py" for p in SRC.iterdir() if (p / "__init__.py").exists())


def face_problems(module: str, text: str, *, is_package: bool = False) -> list[str]:
    """Imports in ``module`` that reach past another package's face (``nodwyn.PKG.MODULE``), and
    names it takes from its own package's face instead of a module (a circle the face hides)."""
    own = layer_of(module)
    out = []
    for node in ast.walk(ast.parse(text)):
        found: list[tuple[str, list[str]]]
        if isinstance(node, ast.Import):
            found = [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found = [(node.module, [a.name for a in node.names])]
        else:
            continue
        for name, names in found:
            parts = name.split(".")
            if parts[0] != "nodwyn" or len(parts) < 2:
                continue
            if parts[1] != own and parts[1] != VOCABULARY and len(parts) > 2:
                face = ".".join(parts[:2])
                out.append(f"{module} imports {name}: import it from {face} (add it to {face}'s __all__)")
            elif parts[1] not in (own, VOCABULARY, "errors") and len(parts) == 2 and names:
                public = _public(parts[1])
                out.extend(
                    f"{module} imports {n} from {name}, whose __all__ does not name it"
                    for n in names
                    if n not in public
                )
            elif parts[1] == own and len(parts) == 2 and names and not is_package:
                folder = SRC / own
                named = [n for n in names if not (folder / f"{n}.py").exists() and not (folder / n).is_dir()]
                if named:
                    out.append(f"{module} takes {named} from its own face; import them from their module")
    return out


def _public(package: str) -> list[str]:
    """The names a package's face lists in ``__all__``."""
    tree = ast.parse((SRC / package / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__":
            return list(ast.literal_eval(node.value))
    return []


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(SRC)))
def test_packages_are_imported_through_their_face(path: Path) -> None:
    found = face_problems(module_of(path), path.read_text(), is_package=path.name == "__init__.py")
    assert not found, "\n".join(found)


def _checking(tree: ast.Module) -> dict[str, str]:
    """A lazy face's names imported under ``TYPE_CHECKING`` -> their module (relative to the face)."""
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for sub in node.body:
                assert isinstance(sub, ast.ImportFrom) and sub.module, ast.unparse(sub)
                out.update({a.name: sub.module.split(".", 2)[2] for a in sub.names})
    return out


@pytest.mark.parametrize(
    "path", [p for p in _faces() if p.parent.name != VOCABULARY], ids=lambda p: p.parent.name
)
def test_every_face_names_its_public_api_in_a_sorted_all(path: Path) -> None:
    import importlib

    tree = ast.parse(path.read_text())
    declared = [n for n in tree.body if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "__all__"]
    assert declared, f"{path.relative_to(SRC)} has no __all__"
    names = ast.literal_eval(declared[0].value)
    order = sorted(names, key=lambda n: (0 if n.isupper() else 1 if n[:1].isupper() else 2, n))
    assert names == order, f"sort {path.relative_to(SRC)}'s __all__: {order}"
    package = importlib.import_module(f"nodwyn.{path.parent.name}")
    missing = [n for n in names if not hasattr(package, n)]
    assert not missing, f"{path.relative_to(SRC)}'s __all__ names what it does not give: {missing}"
    # a lazy face (PEP 562) imports each name from the module TYPE_CHECKING names for it
    for name, module in _checking(tree).items():
        home = importlib.import_module(f"nodwyn.{path.parent.name}.{module}")
        assert getattr(package, name) is getattr(home, name), f"{path.parent.name}.{name} is not {module}'s"


@pytest.mark.parametrize(
    ("module", "text", "says"),
    [
        ("nodwyn.cli.run", "from nodwyn.agent.loop import Agent\n", "import it from nodwyn.agent"),
        ("nodwyn.cli.run", "def f():\n    import nodwyn.compose.setup\n", "import it from nodwyn.compose"),
        ("nodwyn.agent.loop", "from nodwyn.agent import Agent\n", "from its own face"),
        ("nodwyn.cli.export", "from nodwyn.export import otel\n", "whose __all__ does not name it"),
    ],
)
def test_the_face_checker_fails_on_an_import_past_a_face(module: str, text: str, says: str) -> None:
    found = face_problems(module, text)
    assert found and says in found[0], found


def test_the_face_checker_passes_faces_modules_and_the_vocabulary() -> None:
    text = "from nodwyn.agent import Agent\nfrom nodwyn.values.events import UserMsg\n"
    assert face_problems("nodwyn.cli.run", text) == []
    assert (
        face_problems(
            "nodwyn.agent.loop", "from nodwyn.agent import ends\nfrom nodwyn.agent.tools import fail\n"
        )
        == []
    )
