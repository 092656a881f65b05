"""bench/structure_counts.py counts what docs/structure.md says, and the code keeps its figure:
no module of src compares an event kind with a string literal (the constants of values.events)."""

from __future__ import annotations

import ast
from pathlib import Path

from bench import structure_counts as sc

ROOT = Path(__file__).resolve().parents[2]


def test_a_literal_comparison_counts_and_a_constant_does_not() -> None:
    sc.KINDS.update(sc.vocabulary_of((ROOT / sc.VOCABULARY).read_text()))
    tree = ast.parse(
        "from nodwyn.values.events import LLM_REQ\n"
        '_WHOLE = frozenset({"summary.add", "summary.revoke"})\n'
        'a = e.kind == "llm.req"\n'
        'b = e.kind in ("user.msg", "note")\n'
        "c = e.kind in _WHOLE\n"
        "d = e.kind == LLM_REQ\n"
        'f = p.kind == "sub"\n'
        'log.append("note", {})\n'
        "g = e.data.get('req')\n"
    )
    assert sc.kind_comparisons(tree) == {3, 4, 5}
    assert sc.kind_literal_lines(tree) == {2, 3, 4, 8}
    assert sc.payload_reads(tree) == 1


def test_no_module_compares_a_kind_with_a_literal() -> None:
    sc.KINDS.update(sc.vocabulary_of((ROOT / sc.VOCABULARY).read_text()))
    found = []
    for path in sorted((ROOT / "src" / "nodwyn").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == sc.VOCABULARY:
            continue
        source = path.read_text()
        lines = source.splitlines()
        compared = sorted(sc.kind_comparisons(ast.parse(source)))
        found += [f"{rel}:{n}: {lines[n - 1].strip()}" for n in compared]
    assert not found, "compare event.kind with the constants of nodwyn.values.events:\n" + "\n".join(found)


def test_the_issue_22_rows_count_what_they_say() -> None:
    tree = ast.parse(
        "from nodwyn.window.build import Window\n"  # past window's face
        "from nodwyn.values.events import Note\n"  # values: the shared vocabulary
        "from nodwyn.agent.state import LoopState\n"  # its own package
        "import nodwyn.log.jsonl\n"  # past log's face
        "from nodwyn.log import Store\n"  # through the face
        'log.append("note", {"text": "x"})\n'
        'log.append(Note(text="x"), "main")\n'
        "out.append(1)\n"
        'if settings.api == "local": pass\n'
        'x = api in ("anthropic",)\n'
        "y = settings.kind == 'local'\n"
    )
    assert sc.dict_appends(tree) == 1
    assert sc.api_branches(tree) == {9, 10}
    assert sc.past_face(tree, "src/nodwyn/agent/loop.py") == 2


def test_no_module_of_src_appends_a_payload_dict() -> None:
    found = []
    for path in sorted((ROOT / "src" / "nodwyn").rglob("*.py")):
        if sc.dict_appends(ast.parse(path.read_text())):
            found.append(path.relative_to(ROOT).as_posix())
    assert not found, "append a typed payload (UserMsg(text=...)), not a kind and a dict:\n" + "\n".join(
        found
    )
