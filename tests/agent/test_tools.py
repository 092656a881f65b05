import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from nodwyn.agent.tools import ToolContext, builtin_tools, catalog, run_call
from nodwyn.agent.tools.shell import MAX_OUTPUT
from nodwyn.values.content import ToolCall

TOOLS = builtin_tools()


ASKED: list[tuple[str, str]] = []


def ctx(ws: Path, *, allow: bool = True, budget: int = 1000, timeout: float = 5.0) -> ToolContext:
    def approve(tool: str, what: str) -> bool:
        ASKED.append((tool, what))
        return allow

    return ToolContext(workspace=ws, read_budget_tokens=budget, approve=approve, shell_timeout=timeout)


def call(ws_ctx: ToolContext, name: str, **args: object) -> tuple[str, bool]:
    out = run_call(ToolCall(id="c1", name=name, arguments=json.dumps(args)), TOOLS, ws_ctx)
    return out.text, out.error


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    (root / "src").mkdir()
    (root / "src" / "m.py").write_text("def f():\n    return 1\n\ndef g():\n    return 1\n")
    return root


def test_catalog_is_sorted_and_complete() -> None:
    names = [s.name for s in catalog(TOOLS.values())]
    assert names == sorted(names)
    assert {"fs-read", "fs-list", "fs-grep", "fs-write", "fs-edit", "shell", "plan-write", "recall"} <= set(
        names
    )


def test_fs_read_whole_and_ranged(ws: Path) -> None:
    c = ctx(ws)
    text, err = call(c, "fs-read", path="a.txt")
    assert not err and text.startswith("line 1\n") and text.endswith("line 100\n")
    out = run_call(ToolCall(id="x", name="fs-read", arguments='{"path":"a.txt","lines":"10-12"}'), TOOLS, c)
    assert out.text == "[lines 10-12 of 100]\nline 10\nline 11\nline 12\n"
    assert out.range == {"start": 10, "end": 12, "total": 100}


def test_ranged_read_stops_within_the_budget(ws: Path) -> None:
    c = ctx(ws, budget=10)  # 30 bytes: 'line 10\n' is 8 bytes -> three lines fit
    text, err = call(c, "fs-read", path="a.txt", lines="10-90")
    assert not err
    assert text.splitlines()[0] == "[lines 10-12 of 100]"
    assert text.splitlines()[1:] == ["line 10", "line 11", "line 12"]


def test_fs_read_bad_inputs(ws: Path, tmp_path: Path) -> None:
    c = ctx(ws)
    (tmp_path / "secret").write_text("s3cret")
    os.symlink(tmp_path / "secret", ws / "link")
    (ws / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02" * 100)
    cases = {
        "../secret": "uses '..'",
        str(tmp_path / "secret"): "outside the workspace",
        "link": "leads outside the workspace",
        "missing.txt": "no such file",
        "blob.bin": "binary file",
        "src": "is a directory",
    }
    for path, expected in cases.items():
        text, err = call(c, "fs-read", path=path)
        assert err and expected in text, (path, text)
        assert "s3cret" not in text
    text, err = call(c, "fs-read", path="a.txt", lines="200-210")
    assert err and "has 100 lines" in text
    text, err = call(c, "fs-read", path="a.txt", lines="ten")
    assert err and '"A-B"' in text


def test_a_50_mb_file_asks_for_a_range(ws: Path) -> None:
    big = ws / "big.log"
    with big.open("w") as f:
        line = "x" * 99 + "\n"
        for _ in range(50 * 1024 * 1024 // 100):
            f.write(line)
    c = ctx(ws, budget=1000)
    text, err = call(c, "fs-read", path="big.log")
    assert err and "50.0 MB" in text and "read a range" in text and '"1-30"' in text
    assert len(text) < 300
    text, err = call(c, "fs-read", path="big.log", lines="1000-1002")
    assert not err and text.startswith(f"[lines 1000-1002 of {50 * 1024 * 1024 // 100}]")


def test_a_missing_path_says_what_the_nearest_directory_holds(ws: Path) -> None:
    """A small model guesses directories (``config/a.txt`` for ``a.txt``) and then lists the one it
    guessed, again and again; the error names what is there, so the next call can be right."""
    c = ctx(ws)
    text, err = call(c, "fs-read", path="config/a.txt")
    assert (
        err
        and text
        == "config/a.txt: no such file or directory in the workspace; the workspace root holds: a.txt, src"
    )
    text, err = call(c, "fs-read", path="src/lib/m.py")
    assert err and text.endswith("; src holds: m.py")
    text, err = call(c, "fs-list", path="config")
    assert err and text.endswith("the workspace root holds: a.txt, src")
    for n in range(30):
        (ws / "src" / f"f{n:02d}.py").write_text("")
    text, err = call(c, "fs-read", path="src/x/y.py")
    assert err and text.endswith("f19.py and 11 more (fs-list shows them)")


def test_invalid_arguments_and_unknown_tool(ws: Path) -> None:
    c = ctx(ws)
    out = run_call(ToolCall(id="x", name="fs-read", arguments="{not json"), TOOLS, c)
    assert out.error and "not valid JSON" in out.text and '"path"' in out.text
    out = run_call(ToolCall(id="x", name="fs-read", arguments='{"lines": "1-2"}'), TOOLS, c)
    assert out.error and "missing required argument 'path'" in out.text
    out = run_call(ToolCall(id="x", name="fs-read", arguments='{"path": 3}'), TOOLS, c)
    assert out.error and "'path' must be a string" in out.text
    out = run_call(ToolCall(id="x", name="fs-read", arguments='{"path": "a.txt", "mode": 1}'), TOOLS, c)
    assert out.error and "unknown argument 'mode'" in out.text
    out = run_call(ToolCall(id="x", name="teleport", arguments="{}"), TOOLS, c)
    assert out.error and "unknown tool 'teleport'" in out.text and "fs-read" in out.text
    out = run_call(
        ToolCall(id="x", name="shell", arguments='{"command":"ls"}'), TOOLS, c, offered=["fs-read"]
    )
    assert out.error and "unknown tool 'shell'" in out.text and "tools here are: fs-read" in out.text


def test_list_and_grep(ws: Path) -> None:
    c = ctx(ws)
    text, err = call(c, "fs-list")
    size = (ws / "a.txt").stat().st_size
    assert not err and text.splitlines() == [f"a.txt  ({size} bytes)", "src/"]
    text, err = call(c, "fs-grep", pattern=r"return \d", glob="*.py")
    assert not err and text.splitlines() == ["src/m.py:2:     return 1", "src/m.py:5:     return 1"]
    text, err = call(c, "fs-grep", pattern="(")
    assert err and "not a valid regular expression" in text


def test_an_empty_optional_path_or_glob_is_the_default(ws: Path) -> None:
    # a small local model fills every argument of the schema, the optional ones as ""
    c = ctx(ws)
    text, err = call(c, "fs-grep", pattern=r"return \d", path="", glob="")
    assert not err and text.splitlines() == ["src/m.py:2:     return 1", "src/m.py:5:     return 1"]
    text, err = call(c, "fs-list", path="")
    assert not err and text.splitlines()[-1] == "src/"
    text, err = call(c, "fs-read", path="")
    assert err and "path is empty" in text  # a path a tool needs stays required


def test_write_and_edit_ask_and_stay_inside(ws: Path) -> None:
    c = ctx(ws)
    text, err = call(c, "fs-write", path="new/dir/f.txt", content="hello\nworld\n")
    assert not err and (ws / "new/dir/f.txt").read_text() == "hello\nworld\n"
    assert ASKED[-1] == ("fs-write", "create new/dir/f.txt (12 bytes)")
    text, err = call(c, "fs-write", path="../escape.txt", content="x")
    assert err and not (ws.parent / "escape.txt").exists()
    text, err = call(c, "fs-edit", path="src/m.py", old="return 1", new="return 2")
    assert err and "occurs 2 times" in text and "lines 2, 5" in text
    text, err = call(c, "fs-edit", path="src/m.py", old="absent", new="x")
    assert err and "not found" in text
    text, err = call(
        c, "fs-edit", path="src/m.py", old="def g():\n    return 1", new="def g():\n    return 2"
    )
    assert not err and "line 4" in text
    assert (ws / "src/m.py").read_text().endswith("return 2\n")


def test_declined_approval_changes_nothing(ws: Path) -> None:
    c = ctx(ws, allow=False)
    text, err = call(c, "fs-write", path="a.txt", content="gone")
    assert err and "declined" in text and (ws / "a.txt").read_text().startswith("line 1")
    text, err = call(c, "shell", command="touch made")
    assert err and "declined" in text and not (ws / "made").exists()


def test_shell_output_status_and_timeout(ws: Path) -> None:
    c = ctx(ws, timeout=1.0)
    text, err = call(c, "shell", command="echo hi; echo oops >&2; exit 3")
    assert err and text == (
        "hi\noops\n[exit 3; sandbox workspace-write: writable the workspace and /tmp; "
        "no network ([tools] network = true in config.toml allows it)]"
    )
    text, err = call(c, "shell", command="pwd")
    assert not err and text == f"{ws.resolve()}\n[exit 0]"
    text, err = call(c, "shell", command="echo begun; sleep 60.0173 & wait")
    assert err and "timed out after 1 s" in text and text.startswith("begun")
    # the whole process group was killed, the command's own children too (a pid from inside the
    # sandbox names nothing here: the child is looked for by its arguments)
    end = time.monotonic() + 30
    while time.monotonic() < end and _running("60.0173"):
        time.sleep(0.05)
    assert not _running("60.0173"), "the command's child outlived the timeout"


def _running(marker: str) -> bool:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False)
    return bool(found.stdout.split())


def test_shell_output_past_the_cap_keeps_its_head_and_tail(ws: Path) -> None:
    text, err = call(
        ctx(ws), "shell", command="echo first; head -c 600000 /dev/zero | tr '\\0' x; echo; echo last"
    )
    assert not err and text.startswith("first\n") and text.endswith("last\n[exit 0]")
    assert f"[{6 + 600001 + 5 - MAX_OUTPUT} bytes of output omitted]" in text
    assert len(text) < MAX_OUTPUT + 100


def test_plan_write_returns_the_plan(ws: Path) -> None:
    out = run_call(
        ToolCall(id="p", name="plan-write", arguments='{"plan": "1. read\\n2. fix"}'), TOOLS, ctx(ws)
    )
    assert not out.error and out.plan == "1. read\n2. fix"


def test_recall_brings_back_lines(ws: Path) -> None:
    c = ToolContext(
        workspace=ws, read_budget_tokens=100, approve=lambda t, w: True, recall=lambda seq: "a\nb\nc\nd\n"
    )
    out = run_call(ToolCall(id="r", name="recall", arguments='{"seq": 7, "lines": "2-3"}'), TOOLS, c)
    assert out.text == "[seq 7 lines 2-3 of 4]\nb\nc\n"


@pytest.mark.parametrize(
    ("content", "lines", "header"),
    [
        ("a\nb\nc", "1-1", "[lines 1-1 of 3]"),
        ("a\nb\nc", "2", "[lines 2-2 of 3]"),
        ("a\nb\nc", "3-", "[lines 3-3 of 3]"),
        ("a\nb\nc\n", "1-2", "[lines 1-2 of 3]"),
        ("a\nb\n\n", "1", "[lines 1-1 of 3]"),
    ],
)
def test_a_ranged_read_counts_every_line_of_the_file(ws: Path, content: str, lines: str, header: str) -> None:
    (ws / "f.txt").write_text(content)
    text, err = call(ctx(ws), "fs-read", path="f.txt", lines=lines)
    assert not err and text.splitlines()[0] == header


def test_links_that_stay_inside_the_workspace_still_work(ws: Path) -> None:
    """Confinement refuses links out; links within the workspace (relative or absolute) work."""
    os.symlink("src/m.py", ws / "rel-link")
    os.symlink(ws / "src", ws / "abs-dir-link")
    os.symlink("../a.txt", ws / "src" / "up-link")
    c = ctx(ws)
    text, err = call(c, "fs-read", path="rel-link")
    assert not err and text.startswith("def f():")
    text, err = call(c, "fs-read", path="src/up-link", lines="1-1")
    assert not err and text == "[lines 1-1 of 100]\nline 1\n"
    text, err = call(c, "fs-list", path="abs-dir-link")
    assert not err and text.splitlines()[0].startswith("m.py  (")
    text, err = call(c, "fs-edit", path="abs-dir-link/m.py", old="def f():", new="def h():")
    assert not err and (ws / "src" / "m.py").read_text().startswith("def h():")
    text, err = call(c, "fs-write", path="rel-link", content="x = 1\n")
    assert not err and text.startswith("wrote src/m.py") and (ws / "src" / "m.py").read_text() == "x = 1\n"
    assert (ws / "rel-link").is_symlink()
    text, err = call(c, "fs-write", path=".", content="x")
    assert err and "is a directory" in text


def test_a_rewritten_file_keeps_its_mode(ws: Path) -> None:
    script = ws / "run.sh"
    script.write_text("echo hi\n")
    script.chmod(0o750)
    text, err = call(ctx(ws), "fs-edit", path="run.sh", old="hi", new="there")
    assert not err and script.read_text() == "echo there\n"
    assert script.stat().st_mode & 0o777 == 0o750
    assert not [p for p in ws.iterdir() if p.name.endswith(".nodwyn-tmp")]


GREP_FILES = {
    "empty.txt": "",
    "no-newline.txt": "alpha\nbeta",
    "blank-tail.txt": "alpha\n\n\n",
    "crlf.txt": "alpha\r\nbeta\r\n",
    "span.txt": "a\nac\nx\nxy\nab c\n",
    "words.txt": "self.x = 1\n  # note\nTODO: x\n\nend\n",
}
GREP_PATTERNS = [
    r"^$",
    r"$",
    r"^",
    r"a[^b]*c",
    r"x\s*y",
    r"\s+$",
    r"^\s*#",
    r"\bself\b",
    r"(?i)todo",
    "a",
    r"c$",
    r"\Aal",
    r"(?s)a.*c",
]


@pytest.mark.parametrize("pattern", GREP_PATTERNS)
def test_grep_finds_exactly_the_lines_a_per_line_search_finds(tmp_path: Path, pattern: str) -> None:
    """fs-grep searches whole files first (RE2, ^/$ at line edges) and then only the lines its
    matches touch; the lines it reports are exactly those Python's re finds one line at a time."""
    import re

    for name, text in GREP_FILES.items():
        (tmp_path / name).write_bytes(text.encode())
    expected = []
    for name in sorted(GREP_FILES):
        for number, line in enumerate(GREP_FILES[name].splitlines(keepends=True), start=1):
            line = line.rstrip("\n")
            if re.search(pattern, line):
                expected.append(f"{name}:{number}: {line}")
    text, err = call(ctx(tmp_path), "fs-grep", pattern=pattern)
    got = [] if text.startswith("no match") else text.split("\n")
    assert got == expected


ITEMS = "def last(items):\n    return items[len(items)]\n\n\ndef first(items):\n    return items[0]\n"
SHOWN = "the number and ' | ' are not part of the text):\n"


def test_edit_miss_shows_the_most_similar_lines(ws: Path) -> None:
    (ws / "items.py").write_text(ITEMS)
    text, err = call(ctx(ws), "fs-edit", path="items.py", old="return items[len(items) - 1]", new="x")
    assert err and text == (
        "fs-edit: the old text was not found in items.py; the most similar text is at line 2. Copy the "
        "exact text, whitespace included, from the lines below into old (each shown as N | text, with a "
        "line of context; " + SHOWN + "1 | def last(items):\n2 |     return items[len(items)]\n3 | "
    )
    assert (ws / "items.py").read_text() == ITEMS


def test_edit_miss_by_indentation_only_says_so(ws: Path) -> None:
    (ws / "items.py").write_text(ITEMS)
    old = "def first(items):\n  return items[0]  \n"
    text, err = call(ctx(ws), "fs-edit", path="items.py", old=old, new="x")
    assert err and text == (
        "fs-edit: the old text was not found in items.py; lines 5-6 differ from it only in whitespace "
        "(indentation, spaces or line ends). Copy the exact text, whitespace included, from the lines "
        "below into old (each shown as N | text, with a line of context; " + SHOWN + "4 | \n"
        "5 | def first(items):\n6 |     return items[0]"
    )


def test_edit_old_lines_without_the_files_blank_lines_match_once(ws: Path) -> None:
    """The realistic set's fix-test: the SEARCH lines left out the two blank lines between the
    constant and the def (ADR 0445); the edit is made, and the result says how it matched."""
    src = "TAX_RATE = 0.2\n\n\ndef with_tax(net):\n    return round(net + TAX_RATE, 2)  \n"
    (ws / "prices.py").write_text(src)
    old = "TAX_RATE = 0.2\ndef with_tax(net):\n    return round(net + TAX_RATE, 2)"
    new = "TAX_RATE = 0.2\n\n\ndef with_tax(net):\n    return round(net * (1 + TAX_RATE), 2)"
    text, err = call(ctx(ws), "fs-edit", path="prices.py", old=old, new=new)
    assert not err and text == (
        "edited prices.py at line 1 (its old lines matched with blank lines and trailing spaces ignored)"
    )
    assert (ws / "prices.py").read_text() == new + "\n"
    (ws / "twice.py").write_text("a = 1\n\nb = 2\na = 1\nb = 2\n")  # two loose matches: none made
    text, err = call(ctx(ws), "fs-edit", path="twice.py", old="a = 1\n b = 2", new="x")
    assert err and "not found" in text
    text, err = call(ctx(ws), "fs-edit", path="twice.py", old="a = 1\nb = 2  ", new="x")
    assert err and "not found" in text and (ws / "twice.py").read_text() == "a = 1\n\nb = 2\na = 1\nb = 2\n"


def test_edit_hopeless_miss_keeps_the_short_message(ws: Path) -> None:
    (ws / "items.py").write_text(ITEMS)
    for old in ("last()", "class Config:\n    debug = False"):
        text, err = call(ctx(ws), "fs-edit", path="items.py", old=old, new="x")
        assert err and text == (
            "fs-edit: the old text was not found in items.py; read the file and copy the exact text"
        )


def test_edit_miss_in_a_large_file_shows_a_bounded_region(ws: Path) -> None:
    lines = [f"value_{i} = compute({i}, scale={i % 7})" for i in range(1, 5001)]
    lines[2999] = "x" * 1000  # a long line inside the region
    (ws / "big.py").write_text("\n".join(lines) + "\n")
    old = "\n".join(lines[2990:3030]).replace("compute(", "calc(")  # 40 lines, each a little off
    text, err = call(ctx(ws), "fs-edit", path="big.py", old=old, new="x")
    rows = text.split("\n")
    assert err and rows[0] == (
        "fs-edit: the old text was not found in big.py; the most similar text is at lines 2991-3030. "
        "Copy the exact text, whitespace included, from the lines below into old (each shown as N | "
        "text, with a line of context; " + SHOWN.removesuffix("\n")
    )
    assert rows[1:3] == [
        "2990 | value_2990 = compute(2990, scale=1)",
        "2991 | value_2991 = compute(2991, scale=2)",
    ]
    assert rows[11] == "3000 | " + "x" * 200 + " [line cut at 200 characters]"
    assert rows[20:] == [
        "3009 | value_3009 = compute(3009, scale=6)",
        '[lines 3010-3031 not shown; read them with fs-read lines "3010-3031"]',
    ]
    assert len(text) < 2500
