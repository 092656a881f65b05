"""The project's instructions: ``AGENTS.md`` files, read once at session start (ADR 0364).

The workspace's ``AGENTS.md`` and those of its parent folders up to the repository root (the
nearest folder holding ``.git``; the workspace alone outside a repository), root first and the
workspace's last, as Codex reads them; a folder without ``AGENTS.md`` gives its ``CLAUDE.md``
instead. The text becomes part of the recipe's fixed system prompt, so every request of the session
carries the same bytes and replay reads them from the log; a resume reads the files again and, if
they changed, records the new prompt (one prefix move, at the turn boundary the resume is).
The whole is capped at ``MAX_BYTES``, and at an eighth of the model's context (``cap_for``: 3 KB on
an 8,192-token local model, where an 18 KB file left no room for the task; ADR 0366); a cut says so
in the prompt and in a note.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

NAMES = ("AGENTS.md", "CLAUDE.md")
MAX_BYTES = 32 * 1024
BYTES_PER_TOKEN = 3  # the window's own estimate of a token


def cap_for(context_size: int) -> int:
    """The most bytes of instructions a model of ``context_size`` tokens is given: an eighth of its
    context, and never more than ``MAX_BYTES``."""
    return min(MAX_BYTES, context_size * BYTES_PER_TOKEN // 8)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProjectDoc:
    text: str  # what the system prompt gains
    files: tuple[str, ...]  # relative to the workspace: AGENTS.md, ../AGENTS.md
    size: int  # bytes of the files, before any cut
    cut: bool = False
    cap: int = MAX_BYTES  # the bytes kept when cut

    def banner(self) -> str:
        """``instructions: AGENTS.md, 2.1 KB`` (names relative to the workspace's folder)."""
        names = ", ".join(self.files)
        cut = f", cut to {self.cap / 1024:.1f} KB" if self.cut else ""
        return f"instructions: {names}, {self.size / 1024:.1f} KB{cut}"


def repo_root(workspace: Path) -> Path | None:
    for folder in (workspace, *workspace.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _folders(workspace: Path) -> list[Path]:
    """The repository root's folder first, down to ``workspace``."""
    root = repo_root(workspace)
    if root is None or root == workspace:
        return [workspace]
    chain = [workspace, *workspace.parents]
    return chain[chain.index(root) :: -1]


def read_project_doc(workspace: Path, cap: int = MAX_BYTES) -> ProjectDoc | None:
    """The instructions of ``workspace`` (resolved), at most ``cap`` bytes of them, or None when
    there are none."""
    parts: list[tuple[str, str]] = []  # (the file relative to the workspace, its text)
    for folder in _folders(workspace):
        for name in NAMES:
            path = folder / name
            if path.is_file():
                try:
                    text = path.read_bytes().decode("utf-8", "replace")
                    parts.append((os.path.relpath(path, workspace), text))
                except OSError:
                    continue
                break
    if not parts:
        return None
    size = sum(len(text.encode("utf-8")) for _, text in parts)
    body = "\n\n".join(f"# Project instructions ({shown})\n\n{text.strip()}" for shown, text in parts)
    raw = body.encode("utf-8")
    cut = len(raw) > cap
    if cut:
        body = raw[:cap].decode("utf-8", "ignore")
        body += f"\n\n[the project instructions are cut here: {cap} of their {len(raw)} bytes are kept]"
    files = tuple(shown for shown, _ in parts)
    return ProjectDoc(text=body, files=files, size=size, cut=cut, cap=cap)
