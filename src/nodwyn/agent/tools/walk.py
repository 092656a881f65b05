"""fs-grep's walk of a directory: files in name order, depth first, without recursion (ADR 0323).

``os.fwalk`` recurses once per level: a cloned repository 1,200 directories deep raised
``RecursionError`` out of fs-grep. This walk keeps its own stack of open directory descriptors
(each opened with ``O_NOFOLLOW`` relative to its parent, so no link is followed), stops
``MAX_DEPTH`` levels down (the descriptors it holds stay far below the open-file limit) and
leaves out version-control and tool directories and nodwyn's own files (``Protected``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from nodwyn.agent.tools.deadline import Deadline
from nodwyn.agent.tools.paths import DIR_FLAGS
from nodwyn.agent.tools.protect import Protected

MAX_DEPTH = 64  # directory levels below the one searched


@dataclass(slots=True)
class Walked:
    """What a walk left out, for the answer's last line."""

    too_deep: int = 0  # directories not entered: deeper than MAX_DEPTH
    protected: list[str] = field(default_factory=list)  # nodwyn's own places passed by


@dataclass(slots=True)
class _Level:
    fd: int
    prefix: str  # the directory's path relative to the workspace, with a trailing "/" (or "")
    dirs: list[str]
    depth: int


def _listing(fd: int) -> tuple[list[str], list[str]]:
    """A directory's subdirectories and other entries, each sorted (nothing followed)."""
    dirs: list[str] = []
    files: list[str] = []
    with os.scandir(fd) as it:
        for entry in it:
            try:
                is_dir = stat.S_ISDIR(entry.stat(follow_symlinks=False).st_mode)
            except OSError:
                continue
            (dirs if is_dir else files).append(entry.name)
    return sorted(dirs), sorted(files)


def _files(
    fd: int, prefix: str, names: list[str], workspace: Path, protected: Protected, walked: Walked
) -> Iterator[tuple[int, str, str]]:
    for name in names:
        if protected.contains(workspace, prefix + name):
            walked.protected.append(prefix + name)
        else:
            yield fd, prefix + name, name


def walk_files(
    fd: int,
    prefix: str,
    *,
    workspace: Path,
    skip: frozenset[str],
    protected: Protected,
    deadline: Deadline,
    walked: Walked,
) -> Iterator[tuple[int, str, str]]:
    """``(dir_fd, path shown, name)`` for every non-directory entry under the open directory ``fd``
    (shown at ``prefix``, "" for the workspace root); ``fd`` stays the caller's."""
    dirs, files = _listing(fd)
    stack = [_Level(fd=fd, prefix=prefix, dirs=dirs, depth=0)]
    try:
        yield from _files(fd, prefix, files, workspace, protected, walked)
        while stack:
            deadline.check()
            top = stack[-1]
            if not top.dirs:
                stack.pop()
                if top.fd != fd:
                    os.close(top.fd)
                continue
            name = top.dirs.pop(0)
            shown = top.prefix + name
            if name in skip:
                continue
            if protected.contains(workspace, shown):
                walked.protected.append(shown)
                continue
            if top.depth + 1 > MAX_DEPTH:
                walked.too_deep += 1
                continue
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=top.fd)
            except OSError:
                continue
            try:
                sub_dirs, sub_files = _listing(child)
            except OSError:
                os.close(child)
                continue
            stack.append(_Level(fd=child, prefix=shown + "/", dirs=sub_dirs, depth=top.depth + 1))
            yield from _files(child, shown + "/", sub_files, workspace, protected, walked)
    finally:
        for level in stack:
            if level.fd != fd:
                os.close(level.fd)
