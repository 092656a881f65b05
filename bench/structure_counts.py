"""The structure figures of a git revision (docs/structure.md), computed from git alone.

    .venv/bin/python bench/structure_counts.py BASE [REV ...]

Each revision is read with ``git ls-tree`` / ``git show REV:PATH`` (no checkout, the work tree is
not touched) and measured the same way:

- loop: lines of ``src/nodwyn/agent/loop.py``, of its class ``Agent``, its methods besides
  ``__init__``, and the parameters of ``Agent.__init__`` (keyword parameters, ``self`` left out);
- the ten longest functions in ``src`` (lines from ``def`` to the last line of the body), and the
  ten longest in the modules the baseline had (new packages left out);
- kind comparisons (the kinds the revision's ``values.events.KINDS`` lists): lines of
  ``src/**/*.py`` (``values/events.py`` left out: the vocabulary lives there) where a comparison
  (``==``, ``!=``, ``in``, ``not in``) has a kind's string literal as an operand or inside one
  (a tuple, set, list, ``frozenset({...})``), or a module-level name bound to a set of kind
  literals; and the lines holding a kind literal at all;
- payload reads by hand: ``NAME.data[...]`` / ``NAME.data.get(...)`` on an event in ``src``
  outside ``values/events.py`` (and outside ``dialects``, whose ``.data`` is a stream event's text);
- harnesses: functions in ``tests`` and ``bench`` that append an ``llm.req`` themselves (the
  kind's literal or ``LLM_REQ`` as the first argument of an ``append``/``add`` call) instead of
  recording through ``nodwyn.record`` / ``nodwyn.testing`` (listed by name: a test that forges
  a request on purpose is one of them);
- dict-literal appends (issue 22): calls in ``src`` of a method ``append``/``add`` with at
  least two positional arguments whose second is a dict literal (an event written as a kind and a
  payload dict instead of a typed payload, ``append(UserMsg(text=...), ctx)``);
- ``api`` branches outside ``dialects/``: lines of ``src`` outside ``dialects`` (whose ``apis.py``
  is the per-API table; and outside ``fakes``, servers that each speak one API)
  comparing a name or attribute ``api`` with anything (``settings.api == "local"``, ``api in (...)``);
- imports past a face: ``from nodwyn.PKG.MODULE import ...`` (or ``import nodwyn.PKG.MODULE``) in
  a module of another package of ``src`` (``values`` left out: the shared vocabulary is imported
  by module);
- field readers: modules of ``src`` defining a function that checks a value against a type it is
  given (``isinstance(value, typ)`` with ``typ`` a parameter: a reader of fields by declared
  type), and the functions that check a reply's field by hand for one type each
  (``opt_str``/``opt_list``/``opt_dict``-shaped: ``def opt_*``) counted with their module;
- lines of ``src``: lines of ``src/**/*.py``;
- ADRs: files ``docs/adr/NNNN-*.md``.

The first revision is the baseline; the table has one column per revision. ``--out FILE``
writes it between the ``<!-- counts -->`` and ``<!-- /counts -->`` lines of FILE (docs/structure.md)
instead of printing it.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

VOCABULARY = "src/nodwyn/values/events.py"
KINDS: set[str] = set()  # the revision's vocabulary, read from its values/events.py
LOOP = "src/nodwyn/agent/loop.py"
PROFILES = "src/nodwyn/dialects/apis.py"  # the per-API profiles (issue 22), where api may be named
START, END = "<!-- counts -->", "<!-- /counts -->"
_ADR = re.compile(r"docs/adr/\d{4}-[^/]+\.md")


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def files(rev: str, *paths: str) -> list[str]:
    return git("ls-tree", "-r", "--name-only", rev, "--", *paths).split()


def show(rev: str, path: str) -> str:
    return git("show", f"{rev}:{path}")


def _is_kind(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in KINDS


def _kinds_in(node: ast.AST) -> bool:
    """A kind literal, or a tuple/set/list/frozenset(...) holding one."""
    if _is_kind(node):
        return True
    if isinstance(node, ast.Tuple | ast.Set | ast.List):
        return any(_is_kind(e) for e in node.elts)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("frozenset", "set")
    ):
        return any(_kinds_in(a) for a in node.args)
    return False


def _kind_sets(tree: ast.Module) -> set[str]:
    """Module-level names bound to a collection of kind literals (``_WHOLE = frozenset({...})``)."""
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if _kinds_in(value) and not _is_kind(value):
            out.update(t.id for t in targets if isinstance(t, ast.Name))
    return out


def kind_comparisons(tree: ast.Module) -> set[int]:
    sets = _kind_sets(tree)
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_kinds_in(o) or (isinstance(o, ast.Name) and o.id in sets) for o in operands):
                lines.add(node.lineno)
    return lines


def kind_literal_lines(tree: ast.Module) -> set[int]:
    return {n.lineno for n in ast.walk(tree) if isinstance(n, ast.Constant) and _is_kind(n)}


def payload_reads(tree: ast.Module) -> int:
    """``x.data[...]`` and ``x.data.get(...)`` where ``x`` is a plain name."""
    n = 0
    for node in ast.walk(tree):
        target = None
        if isinstance(node, ast.Subscript):
            target = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            target = node.func.value
        if isinstance(target, ast.Attribute) and target.attr == "data" and isinstance(target.value, ast.Name):
            n += 1
    return n


def functions(tree: ast.Module, path: str) -> list[tuple[int, str]]:
    """(lines, path:qualified name) of every function, nested ones included."""
    out: list[tuple[int, str]] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                end = child.end_lineno or child.lineno
                out.append(
                    (end - child.lineno + 1, f"{path.removeprefix('src/nodwyn/')}:{prefix}{child.name}")
                )
                walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


def dict_appends(tree: ast.Module) -> int:
    """``x.append(kind, {...}, ...)`` / ``x.add(kind, {...})``: a payload handed over as a dict literal."""
    return sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("append", "add")
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Dict)
    )


def _is_api(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "api") or (
        isinstance(node, ast.Name) and node.id == "api"
    )


def api_branches(tree: ast.Module) -> set[int]:
    """Lines comparing ``api`` (a name or an attribute) with something."""
    return {
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare) and any(_is_api(o) for o in [node.left, *node.comparators])
    }


def past_face(tree: ast.Module, path: str) -> int:
    """Imports of another package's module (``nodwyn.PKG.MODULE``), ``values`` left out."""
    own = path.removeprefix("src/nodwyn/").split("/")[0].removesuffix(".py")
    n = 0
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if len(parts) >= 3 and parts[0] == "nodwyn" and parts[1] not in (own, "values"):
                n += 1
    return n


def field_reader(tree: ast.Module) -> bool:
    """Whether the module defines a reader of fields by declared type (or ``opt_*`` checks)."""
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        if fn.name.startswith("opt_"):
            body_checks = any(
                isinstance(n, ast.Call) and ast.unparse(n.func) == "isinstance" for n in ast.walk(fn)
            )
            if body_checks:
                return True
        params = {a.arg for a in [*fn.args.args, *fn.args.kwonlyargs]}
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Call)
                and ast.unparse(node.func) == "isinstance"
                and len(node.args) == 2
                and isinstance(node.args[1], ast.Name)
                and node.args[1].id in params
            ):
                return True
    return False


def _appends_request(fn: ast.AST) -> bool:
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("append", "add")
            and node.args
        ):
            first = node.args[0]
            if (isinstance(first, ast.Constant) and first.value == "llm.req") or (
                isinstance(first, ast.Name | ast.Attribute) and ast.unparse(first).endswith("LLM_REQ")
            ):
                return True
            if isinstance(first, ast.Call) and ast.unparse(first.func) in ("LlmReq", "LlmReq.from_data"):
                return True  # a typed llm.req built by hand (issue 22)
    return False


@dataclass
class Counts:
    rev: str
    loop_lines: int = 0
    agent_lines: int = 0
    agent_methods: int = 0
    agent_params: int = 0
    largest: list[tuple[int, str]] = field(default_factory=list)
    largest_old: list[tuple[int, str]] = field(default_factory=list)  # in the baseline's modules
    kind_comparisons: int = 0
    kind_literal_lines: int = 0
    payload_reads: int = 0
    harnesses: list[str] = field(default_factory=list)
    dict_appends: int = 0
    api_branches: int = 0
    past_face: int = 0
    readers: list[str] = field(default_factory=list)
    src_lines: int = 0
    adrs: int = 0


def vocabulary(rev: str) -> set[str]:
    """The kinds the revision's ``values/events.py`` lists in ``KINDS``."""
    return vocabulary_of(show(rev, VOCABULARY))


def vocabulary_of(source: str) -> set[str]:
    """The kinds a ``values/events.py`` source lists in ``KINDS``, or (once ``KINDS`` is derived
    from the payload classes, issue 22) names as a payload class's ``KIND``."""
    kinds: set[str] = set()
    tree = ast.parse(source)
    constants: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.AnnAssign | ast.Assign) or node.value is None:
            continue
        targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
        if any(isinstance(t, ast.Name) and t.id == "KINDS" for t in targets):
            strings = (n.value for n in ast.walk(node.value) if isinstance(n, ast.Constant))
            kinds |= {v for v in strings if isinstance(v, str)}
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            constants.update((t.id, node.value.value) for t in targets if isinstance(t, ast.Name))
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for node in cls.body:
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.target.id == "KIND"
            ):
                value = node.value
                if isinstance(value, ast.Name) and value.id in constants:
                    kinds.add(constants[value.id])
                elif isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value:
                    kinds.add(value.value)
    return kinds


def measure(rev: str, baseline_modules: set[str] | None = None) -> Counts:
    c = Counts(rev=git("rev-parse", "--short", rev).strip())
    KINDS.clear()
    KINDS.update(vocabulary(rev))
    fns: list[tuple[int, str]] = []
    for path in files(rev, "src"):
        if not path.endswith(".py"):
            continue
        source = show(rev, path)
        tree = ast.parse(source)
        fns += functions(tree, path)
        c.src_lines += len(source.splitlines())
        c.dict_appends += dict_appends(tree)
        c.past_face += past_face(tree, path)
        if field_reader(tree):
            c.readers.append(path.removeprefix("src/nodwyn/"))
        if "/dialects/" not in path and "/fakes/" not in path and path != PROFILES:
            c.api_branches += len(api_branches(tree))
        if path != VOCABULARY:
            c.kind_comparisons += len(kind_comparisons(tree))
            c.kind_literal_lines += len(kind_literal_lines(tree))
            if "/dialects/" not in path:
                c.payload_reads += payload_reads(tree)
        if path == LOOP:
            source = show(rev, path)
            c.loop_lines = len(source.splitlines())
            for node in tree.body:
                if isinstance(node, ast.ClassDef) and node.name == "Agent":
                    c.agent_lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    methods = [n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
                    c.agent_methods = len([m for m in methods if m.name != "__init__"])
                    for m in methods:
                        if m.name == "__init__":
                            a = m.args
                            c.agent_params = len(a.args) - 1 + len(a.kwonlyargs) + len(a.posonlyargs)
    c.largest = sorted(fns, key=lambda f: (-f[0], f[1]))[:10]
    old = [f for f in fns if baseline_modules is None or f[1].split(":")[0] in baseline_modules]
    c.largest_old = sorted(old, key=lambda f: (-f[0], f[1]))[:10]
    for path in files(rev, "tests", "bench"):
        if not path.endswith(".py"):
            continue
        tree = ast.parse(show(rev, path))
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and _appends_request(fn):
                c.harnesses.append(f"{path}:{fn.name}")
    c.adrs = len([p for p in files(rev, "docs/adr") if _ADR.fullmatch(p)])
    return c


def table(counts: list[Counts]) -> str:
    head = "| | " + " | ".join(f"`{c.rev}`" for c in counts) + " |"
    rule = "|---|" + "---:|" * len(counts)
    rows = [
        ("`agent/loop.py` lines", [c.loop_lines for c in counts]),
        ("class `Agent` lines", [c.agent_lines for c in counts]),
        ("`Agent` methods besides `__init__`", [c.agent_methods for c in counts]),
        ("`Agent.__init__` parameters", [c.agent_params for c in counts]),
        ("longest function in `src` (lines)", [c.largest[0][0] for c in counts]),
        ("sum of the ten longest (lines)", [sum(n for n, _ in c.largest) for c in counts]),
        ("... in modules the baseline had (lines)", [sum(n for n, _ in c.largest_old) for c in counts]),
        ("lines comparing a kind with a string literal", [c.kind_comparisons for c in counts]),
        ("lines holding a kind literal (any use)", [c.kind_literal_lines for c in counts]),
        ("event payload fields read by hand", [c.payload_reads for c in counts]),
        ("test/bench functions appending `llm.req` themselves", [len(c.harnesses) for c in counts]),
        ("appends handing over a dict literal", [c.dict_appends for c in counts]),
        ("lines branching on `api` outside `dialects/`", [c.api_branches for c in counts]),
        ("field readers (modules)", [len(c.readers) for c in counts]),
        ("imports past a package's face (outside `values`)", [c.past_face for c in counts]),
        ("lines of `src`", [c.src_lines for c in counts]),
        ("ADRs in `docs/adr`", [c.adrs for c in counts]),
    ]
    out = [head, rule, *(f"| {name} | " + " | ".join(str(v) for v in values) + " |" for name, values in rows)]
    for c in counts:
        out += ["", f"Ten longest functions at `{c.rev}`:", ""]
        out += [f"- {n} `{name}`" for n, name in c.largest]
        out += ["", f"Field readers at `{c.rev}`: " + ", ".join(f"`{r}`" for r in c.readers)]
        if c.harnesses:
            out += [
                "",
                f"Appending `llm.req` themselves at `{c.rev}`: " + ", ".join(f"`{h}`" for h in c.harnesses),
            ]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("revs", nargs="+", help="git revisions; the first is the baseline")
    ap.add_argument("--out", type=Path, help="write the table into this file, between its markers")
    args = ap.parse_args()
    base = {p.removeprefix("src/nodwyn/") for p in files(args.revs[0], "src") if p.endswith(".py")}
    text = table([measure(r, base) for r in args.revs])
    if args.out is None:
        print(text)
        return
    doc = args.out.read_text()
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    args.out.write_text(f"{head}{START}\n{text}\n{END}{tail}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
