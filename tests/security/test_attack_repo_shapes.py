"""Repository shapes a cloned repository can have: file names that are not UTF-8, a tree 1,200
directories deep, names at the length limit. Each is an answer with the name escaped, or a tool
error naming the path asked for; never a crash of the run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nodwyn.agent.tools import ToolContext, builtin_tools, run_call
from nodwyn.values.content import ToolCall

pytestmark = pytest.mark.attack("repository shapes")


def _call(ws: Path, tool: str, **args: object) -> tuple[str, bool]:
    ctx = ToolContext(workspace=ws, read_budget_tokens=10_000, approve=lambda t, w: True, tool_timeout=30)
    out = run_call(ToolCall(id="c", name=tool, arguments=json.dumps(args)), builtin_tools(), ctx)
    out.text.encode("utf-8")  # always text the log can hold
    return out.text, out.error


@pytest.fixture
def latin1(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    os.makedirs(os.fsencode(ws) + b"/d\xe9p\xf4t")
    with open(os.fsencode(ws) + b"/d\xe9p\xf4t/caf\xe9.txt", "wb") as f:
        f.write(b"needle here\n")
    with open(os.fsencode(ws) + b"/\xff\xfe.py", "wb") as f:
        f.write(b"needle too\n")
    return ws


def test_fs_list_escapes_a_name_that_is_not_utf8(latin1: Path) -> None:
    text, error = _call(latin1, "fs-list", path=".")
    assert not error, text
    assert "\\xff\\xfe.py" in text and "d\\xe9p\\xf4t/" in text


def test_fs_grep_escapes_the_paths_it_prints(latin1: Path) -> None:
    text, error = _call(latin1, "fs-grep", pattern="needle")
    assert not error, text
    assert "d\\xe9p\\xf4t/caf\\xe9.txt:1: needle here" in text
    assert "\\xff\\xfe.py:1: needle too" in text


def test_a_not_found_listing_escapes_the_names_it_lists(latin1: Path) -> None:
    text, error = _call(latin1, "fs-read", path="missing.txt")
    assert error and "\\xff\\xfe.py" in text, text


def test_a_path_asked_with_a_surrogate_escape_is_a_tool_error(latin1: Path) -> None:
    text, error = _call(latin1, "fs-read", path="\udcff\udcfe.py")
    assert error and "surrogate" in text, text


def test_a_symlink_whose_target_is_not_utf8_lists_escaped(latin1: Path) -> None:
    os.symlink(b"\xff-target", os.fsencode(latin1) + b"/link")
    text, error = _call(latin1, "fs-list", path=".")
    assert not error and "link -> \\xff-target" in text, text


def _deep(ws: Path, depth: int) -> None:
    """``depth`` nested directories, made relative to each one (paths that long cannot be named)."""
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        with open(os.open("deep.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
            f.write("needle at the bottom\n")
    finally:
        os.close(fd)


def _undeep(ws: Path, depth: int) -> None:
    """Remove what ``_deep`` made, deepest first (pytest's own cleanup would recurse)."""
    fds = [os.open(ws, os.O_RDONLY | os.O_DIRECTORY)]
    for _ in range(depth):
        fds.append(os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1]))
    os.unlink("deep.txt", dir_fd=fds[-1])
    while len(fds) > 1:
        os.close(fds.pop())
        os.rmdir("d", dir_fd=fds[-1])
    os.close(fds[0])


def test_fs_grep_of_a_tree_1200_deep_answers(tmp_path: Path) -> None:
    _deep(tmp_path, 1200)
    (tmp_path / "top.txt").write_text("needle at the top\n")
    try:
        text, error = _call(tmp_path, "fs-grep", pattern="needle")
    finally:
        _undeep(tmp_path, 1200)
    assert not error, text
    assert text.startswith("top.txt:1: needle at the top")
    assert "not searched" in text  # the levels past the walk's depth are said, not hidden


def test_fs_grep_finds_a_file_64_levels_down(tmp_path: Path) -> None:
    _deep(tmp_path, 63)
    text, error = _call(tmp_path, "fs-grep", pattern="bottom")
    assert not error and text.startswith("d/d/") and "deep.txt:1:" in text, text


def test_fs_write_of_a_name_of_252_bytes_works(tmp_path: Path) -> None:
    name = "é" * 126  # 252 bytes of UTF-8; the temporary name must not pass the 255 allowed
    text, error = _call(tmp_path, "fs-write", path=name, content="x\n")
    assert not error, text
    assert (tmp_path / name).read_text() == "x\n"
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_fs_edit_of_a_name_of_255_bytes_works(tmp_path: Path) -> None:
    name = "a" + "€" * 84 + "b"  # 1 + 252 + 1 = 254 bytes
    (tmp_path / name).write_text("old\n")
    text, error = _call(tmp_path, "fs-edit", path=name, old="old", new="new")
    assert not error, text
    assert (tmp_path / name).read_text() == "new\n"


def test_a_name_too_long_is_an_error_naming_the_path_asked_for(tmp_path: Path) -> None:
    name = "n" * 256
    text, error = _call(tmp_path, "fs-write", path=name, content="x\n")
    assert error and name in text and "nodwyn-tmp" not in text, text
    assert list(tmp_path.iterdir()) == []
