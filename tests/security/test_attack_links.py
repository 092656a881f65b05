"""File-tool confinement against a cloned repository carrying planted links:
whatever the model asks, no file tool reads, lists the size of, or changes a file outside
the workspace, and a link loop or a FIFO is one clear error, never a traceback or a hang.

The repository is made with git and cloned with ``git clone``, as a person would get it; the links
are what git checks out."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from nodwyn.agent.tools import Outcome, ToolContext, builtin_tools, run_call
from nodwyn.compose.setup import open_agent
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.testing import isolated_env
from nodwyn.values.content import ToolCall

pytestmark = pytest.mark.attack("file-tool confinement")

SECRET = "outside-secret-4d1f\n"
TOOLS = builtin_tools()


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A clone of a repository whose links lead outside, and the outside directory (once per module:
    each test works on a copy of the clone, links copied as links)."""
    tmp_path = tmp_path_factory.mktemp("planted")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (outside / "target.txt").write_text(SECRET)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("hello repo\n")
    (repo / "notes.txt").write_text("notes\n")
    (repo / "sub").mkdir()
    (repo / "sub" / "deep.txt").write_text("deep\n")
    links = {
        ".README.md.nodwyn-tmp": str(outside / "target.txt"),  # defect 1: the old temporary name
        ".notes.txt.nodwyn-tmp": "../outside/target.txt",
        "docs": str(outside),  # a directory link
        "rel-docs": "../outside",
        "secret.txt": str(outside / "secret.txt"),
        "sub/up": "../../outside/secret.txt",
        "chain1": "chain2",
        "chain2": "rel-docs/secret.txt",
        "loop": "loop",  # defect 6
        "ping": "pong",
        "pong": "ping",
        "sub/self": ".",
        "abs-climb": f"{tmp_path}/ws/sub/../../outside/secret.txt",  # absolute, climbing out of ws
        "root": "/",
        "passwd": "/etc/passwd",
        "dot-climb": "./sub/./../../outside",
        "slash-end": "../outside/",
    }
    for name, target in links.items():
        os.symlink(target, repo / name)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "planted")
    ws = tmp_path / "ws"
    _git(tmp_path, "clone", "-q", str(repo), str(ws))
    assert (ws / ".README.md.nodwyn-tmp").is_symlink()
    return ws, outside


@pytest.fixture
def cloned(template: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """This test's copy of the cloned workspace, and the (shared) outside directory."""
    clone, outside = template
    ws = tmp_path / "ws"
    shutil.copytree(clone, ws, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    untouched(outside)
    return ws, outside


def ctx(ws: Path, approve: Callable[[str, str], bool] = lambda t, w: True) -> ToolContext:
    return ToolContext(workspace=ws, read_budget_tokens=10_000, approve=approve, shell_timeout=5)


def call(c: ToolContext, name: str, **args: object) -> Outcome:
    return run_call(ToolCall(id="c1", name=name, arguments=json.dumps(args)), TOOLS, c)


def untouched(outside: Path) -> None:
    assert (outside / "secret.txt").read_text() == SECRET
    assert (outside / "target.txt").read_text() == SECRET
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt", "target.txt"]


@pytest.mark.parametrize("tool", ["fs-write", "fs-edit"])
@pytest.mark.parametrize("name", ["README.md", "notes.txt"])
def test_planted_temporary_name_link_is_not_written_through(
    cloned: tuple[Path, Path], tool: str, name: str
) -> None:
    ws, outside = cloned
    if tool == "fs-write":
        out = call(ctx(ws), "fs-write", path=name, content="new text\n")
        expected = "new text\n"
    else:
        old = (ws / name).read_text().strip()
        out = call(ctx(ws), "fs-edit", path=name, old=old, new="edited")
        expected = "edited\n"
    assert not out.error, out.text
    untouched(outside)
    assert (ws / name).read_text() == expected and not (ws / name).is_symlink()
    assert (ws / f".{name}.nodwyn-tmp").is_symlink()  # the planted link itself is left alone
    assert not [p for p in ws.iterdir() if p.name.endswith(".nodwyn-tmp") and not p.is_symlink()]


LINKED = [
    "docs/secret.txt",
    "rel-docs/secret.txt",
    "secret.txt",
    "sub/up",
    "chain1",
    "docs",
    "rel-docs",
    "abs-climb",
    "root",
    "passwd",
    "dot-climb/secret.txt",
    "slash-end",
]


@pytest.mark.parametrize("path", LINKED)
@pytest.mark.parametrize("tool", ["fs-read", "fs-list", "fs-grep", "fs-write", "fs-edit"])
def test_links_out_are_refused_by_every_tool(cloned: tuple[Path, Path], tool: str, path: str) -> None:
    ws, outside = cloned
    args: dict[str, object] = {"path": path}
    if tool == "fs-grep":
        args["pattern"] = "outside"
    if tool == "fs-write":
        args["content"] = "pwned"
    if tool == "fs-edit":
        args.update(old="outside", new="pwned")
    out = call(ctx(ws), tool, **args)
    assert out.error and "outside the workspace" in out.text, out.text
    assert "outside-secret" not in out.text and "bytes" not in out.text
    untouched(outside)


@pytest.mark.parametrize("path", ["docs/new.txt", "rel-docs/new/dir/x.txt", "chain1/x", "sub/up/x"])
def test_new_file_under_a_link_out_is_refused(cloned: tuple[Path, Path], path: str) -> None:
    ws, outside = cloned
    out = call(ctx(ws), "fs-write", path=path, content="x")
    assert out.error and "outside the workspace" in out.text
    untouched(outside)


def test_grep_of_the_workspace_skips_links_out(cloned: tuple[Path, Path]) -> None:
    ws, outside = cloned
    out = call(ctx(ws), "fs-grep", pattern="outside-secret")
    assert not out.error and out.text.startswith("no match"), out.text
    out = call(ctx(ws), "fs-grep", pattern="deep|hello")
    assert out.text.splitlines() == ["README.md:1: hello repo", "sub/deep.txt:1: deep"]


def test_list_shows_links_without_following_them(cloned: tuple[Path, Path]) -> None:
    """Defect 17: fs-list showed the size of the file a link points to (/etc/shadow's)."""
    ws, outside = cloned
    out = call(ctx(ws), "fs-list")
    assert not out.error, out.text
    rows = out.text.splitlines()
    assert f"secret.txt -> {outside / 'secret.txt'}  (symlink)" in rows
    assert f"docs -> {outside}  (symlink)" in rows
    assert "loop -> loop  (symlink)" in rows
    assert "sub/" in rows and "README.md  (11 bytes)" in rows
    assert f"({len(SECRET)} bytes)" not in out.text


@pytest.mark.parametrize("path", ["loop", "ping", "loop/x", "sub/self/self/../loop"])
@pytest.mark.parametrize("tool", ["fs-read", "fs-list", "fs-grep", "fs-write", "fs-edit"])
def test_a_link_loop_is_one_clear_error(cloned: tuple[Path, Path], tool: str, path: str) -> None:
    ws, outside = cloned
    args: dict[str, object] = {"path": path}
    if tool == "fs-grep":
        args["pattern"] = "x"
    if tool == "fs-write":
        args["content"] = "x"
    if tool == "fs-edit":
        args.update(old="x", new="y")
    out = call(ctx(ws), tool, **args)
    assert out.error
    assert "symlink loop" in out.text or "'..'" in out.text, out.text
    assert "Traceback" not in out.text and len(out.text.splitlines()) == 1
    untouched(outside)


def _swap_to_link(target: Path, outside: Path) -> Callable[[str, str], bool]:
    def approve(tool: str, what: str) -> bool:
        target.unlink()
        os.symlink(outside / "target.txt", target)
        return True

    return approve


@pytest.mark.parametrize("tool", ["fs-write", "fs-edit"])
def test_a_file_swapped_for_a_link_during_approval_is_not_written(
    cloned: tuple[Path, Path], tool: str
) -> None:
    ws, outside = cloned
    c = ctx(ws, _swap_to_link(ws / "notes.txt", outside))
    if tool == "fs-write":
        out = call(c, "fs-write", path="notes.txt", content="pwned")
    else:
        out = call(c, "fs-edit", path="notes.txt", old="notes", new="pwned")
    assert out.error and ("outside the workspace" in out.text or "changed" in out.text), out.text
    untouched(outside)


def test_a_directory_swapped_for_a_link_during_approval_is_not_written(cloned: tuple[Path, Path]) -> None:
    ws, outside = cloned

    def approve(tool: str, what: str) -> bool:
        (ws / "sub" / "deep.txt").unlink()
        (ws / "sub" / "up").unlink()
        (ws / "sub" / "self").unlink()
        (ws / "sub").rmdir()
        os.symlink(outside, ws / "sub")
        return True

    out = call(ctx(ws, approve), "fs-write", path="sub/target.txt", content="pwned")
    assert out.error and "outside the workspace" in out.text, out.text
    untouched(outside)


def test_a_hard_link_to_an_outside_file_is_replaced_not_written_through(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (outside / "target.txt").write_text(SECRET)
    os.link(outside / "target.txt", ws / "hard.txt")
    out = call(ctx(ws), "fs-edit", path="hard.txt", old="outside", new="edited")
    assert not out.error, out.text
    out = call(ctx(ws), "fs-write", path="hard.txt", content="new")
    assert not out.error and (ws / "hard.txt").read_text() == "new"
    untouched(outside)


def _in_thread(fn: Callable[[], Outcome], seconds: float) -> Outcome | None:
    box: list[Outcome] = []
    t = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    t.start()
    t.join(seconds)
    return box[0] if box else None


@pytest.mark.parametrize("tool", ["fs-read", "fs-edit", "fs-write", "fs-grep-file", "fs-grep-dir"])
def test_a_fifo_is_refused_without_blocking(tmp_path: Path, tool: str) -> None:
    """Defect 7: fs-read of a FIFO waited for a writer forever."""
    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(ws / "pipe")
    (ws / "a.txt").write_text("pipe dream\n")
    c = ctx(ws)
    calls: dict[str, Callable[[], Outcome]] = {
        "fs-read": lambda: call(c, "fs-read", path="pipe"),
        "fs-edit": lambda: call(c, "fs-edit", path="pipe", old="a", new="b"),
        "fs-write": lambda: call(c, "fs-write", path="pipe", content="x"),
        "fs-grep-file": lambda: call(c, "fs-grep", pattern="pipe", path="pipe"),
        "fs-grep-dir": lambda: call(c, "fs-grep", pattern="pipe"),
    }
    out = _in_thread(calls[tool], 10)
    if out is None:  # release the blocked thread before failing
        fd = os.open(ws / "pipe", os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        pytest.fail(f"{tool} blocked on a FIFO")
    if tool == "fs-grep-dir":
        assert not out.error and out.text == "a.txt:1: pipe dream"
    else:
        assert out.error and "FIFO" in out.text, out.text
    assert (ws / "pipe").exists() and not (ws / "pipe").is_file()


def test_a_session_in_the_cloned_repository_goes_on_and_touches_nothing_outside(
    cloned: tuple[Path, Path], tmp_path: Path
) -> None:
    """The whole turn, as a model would drive it: every attempt is one error result in the log,
    the planted temporary name is not written through, and the turn ends with the model's answer."""
    ws, outside = cloned
    os.mkfifo(ws / "pipe")
    attempts = [
        ("fs-read", {"path": "loop"}),
        ("fs-list", {"path": "ping"}),
        ("fs-read", {"path": "pipe"}),
        ("fs-grep", {"pattern": "^(a+)+$"}),
        ("fs-read", {"path": "docs/secret.txt"}),
        ("fs-list", {}),
        ("fs-write", {"path": "README.md", "content": "rewritten\n"}),
        ("fs-edit", {"path": "notes.txt", "old": "notes", "new": "edited"}),
    ]
    calls = [{"name": n, "id": f"a{i}", "arguments": a} for i, (n, a) in enumerate(attempts)]
    with FakeServer(api="openai-chat", script=[{"calls": calls}, {"text": "all done"}]) as fake:
        (tmp_path / "config.toml").write_text(
            f'[control]\nmodel = "chat"\n[models.chat]\napi = "openai-chat"\nmodel = "m"\n'
            f'base_url = "{fake.url}"\ncontext_size = 32000\n'
        )
        env = isolated_env(tmp_path)
        opened = open_agent(env=env, workspace=ws, yes=True)
        try:
            assert opened.agent.user_turn("look around and tidy up").text == "all done"
        finally:
            opened.close()
        sent = [m for m in fake.requests[-1].body["messages"] if m["role"] == "tool"]
    with Store(tmp_path / "home").open(opened.agent.session_id) as log:
        results = {e.data["call_id"]: e.data for e in log.read(1) if e.kind == "tool.result"}
    errors = {cid for cid, r in results.items() if r["error"]}
    assert errors == {"a0", "a1", "a2", "a4"}, results
    assert "symlink loop" in results["a0"]["text"] and "FIFO" in results["a2"]["text"]
    assert len(sent) == len(attempts) and not any("outside-secret" in m["content"] for m in sent)
    assert (ws / "README.md").read_text() == "rewritten\n" and (ws / "notes.txt").read_text() == "edited\n"
    untouched(outside)
