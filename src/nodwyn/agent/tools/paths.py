"""Workspace confinement: a tool's path names something inside the workspace, or is refused."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from nodwyn.errors import ToolError


def confine(workspace: Path, raw: str, *, must_exist: bool = True) -> Path:
    """The real path of ``raw`` (relative to the workspace), refusing ``..``, absolute paths outside
    the workspace, and symlinks that lead out of it."""
    if not isinstance(raw, str) or raw == "":
        raise ToolError('path is empty; give a path relative to the workspace, e.g. "src/app.py"')
    if "\x00" in raw:
        raise ToolError(f"path {raw!r} contains a NUL byte")
    root = workspace.resolve()
    pure = PurePosixPath(raw)
    if ".." in pure.parts:
        raise ToolError(f"path {raw!r} uses '..'; paths must stay inside the workspace {root}")
    candidate = Path(raw) if pure.is_absolute() else root / raw
    if pure.is_absolute() and not _within(Path(os.path.normpath(candidate)), root):
        raise ToolError(f"path {raw!r} is outside the workspace {root}; use a path inside it")
    if must_exist and not candidate.exists() and not candidate.is_symlink():
        raise ToolError(f"{raw}: no such file or directory in the workspace (try fs-list)")
    real = candidate.resolve()  # a file not made yet resolves through its nearest existing parent
    if not _within(real, root):
        raise ToolError(f"path {raw!r} leads outside the workspace (a symlink to {real}); refused")
    return real


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def shown(workspace: Path, path: Path) -> str:
    """A path as the model should see it: relative to the workspace."""
    try:
        rel = path.relative_to(workspace.resolve())
    except ValueError:
        return str(path)
    return str(rel) or "."
