"""Files a task names, shown with it: the task's text followed by each named file as fs-read reads it.

A small model that has not read a file writes it blind (a whole-file write that drops the code it
was asked to change) or answers from a guess (issue 25's realistic set). People name the files
they mean ("add a --shout option to greet.py"), and peers put such files in front of the model
(aider's files in the chat, Claude Code's @-mentions). ``with_named_files`` does that for the
first message of a turn, when the session's settings ask for it (in-process models, ADR 0442),
after, on a session's first turn (not a resumed one's) and when the task names no file or folder, the
workspace's top folder as fs-list lists it (a task that names ``src/nodwyn`` was answered with the
listing of the root instead: ADR 0444):
each word of the task that is the path of a file in the workspace (at most ``MAX_FILES``) is read
with the ordinary fs-read tool (so the workspace confinement, nodwyn's protected files, redaction
and the read cap apply), and its text appended under a header; then, under a header of their own,
the workspace's Python files those files import (``from settings import DEFAULTS``: a port
answered from a guess, ADR 0445), within the same ``MAX_FILES``. The result is the user message
the log records, so replay rebuilds exactly what the model was shown.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from nodwyn.agent.tools import Tool, ToolContext, run_call
from nodwyn.values.content import ToolCall

MAX_FILES = 4
MAX_CHARS = 6000  # a file longer than this is not shown (the model can read it)
_PATHLIKE = re.compile(r"[\w./-]*\w\.\w+")
_WORD = re.compile(r"[\w./-]+")
HEAD = "The files named above, as they are now:"
IMPORTED = "The project's files they import:"
LISTED = "The project's top folder:"
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import\b|import[ \t]+([\w.]+))", re.M)


def named_paths(text: str, ctx: ToolContext) -> list[str]:
    """Words of ``text`` that name a regular file in the workspace, in order, without repeats."""
    found: list[str] = []
    root = ctx.workspace
    for m in _PATHLIKE.finditer(text):
        word = m.group().strip("./") if m.group().startswith("./") else m.group().rstrip(".")
        if word in found or word.startswith("/") or ".." in word.split("/"):
            continue
        if (root / word).is_file():
            found.append(word)
        if len(found) == MAX_FILES:
            break
    return found


def names_a_folder(text: str, ctx: ToolContext) -> bool:
    """Whether a word of ``text`` is the path of a folder in the workspace (``src/nodwyn``, ``tests``)."""
    for m in _WORD.finditer(text):
        word = m.group().strip("./")
        plain = word and not m.group().startswith("/") and ".." not in word.split("/")
        if plain and (ctx.workspace / word).is_dir():
            return True
    return False


def imported_paths(path: str, text: str, ctx: ToolContext) -> list[str]:
    """The workspace's Python files that a Python file ``path`` (its ``text``) imports by absolute
    name (``from settings import X``, ``import pkg.meta``): each module's ``.py`` file or package
    ``__init__.py`` under the workspace root or ``path``'s folder, in the order imported (ADR 0445)."""
    if not path.endswith(".py"):
        return []
    found: list[str] = []
    folder = path.rpartition("/")[0]
    for m in _IMPORT.finditer(text):
        module = (m.group(1) or m.group(2)).replace(".", "/")
        for base in dict.fromkeys(("", folder)):
            for rel in (f"{module}.py", f"{module}/__init__.py"):
                rel = f"{base}/{rel}" if base else rel
                if rel not in found and rel != path and (ctx.workspace / rel).is_file():
                    found.append(rel)
    return found


def _shown(paths: list[str], tools: Mapping[str, Tool], ctx: ToolContext) -> list[tuple[str, str]]:
    """Each of ``paths`` as fs-read reads it (those it refuses, or too long, left out)."""
    out: list[tuple[str, str]] = []
    for path in paths:
        call = ToolCall(id="named", name="fs-read", arguments=json.dumps({"path": path}))
        got = run_call(call, tools, ctx)
        if not got.error and len(got.text) <= MAX_CHARS:
            out.append((path, got.text if got.text.endswith("\n") else got.text + "\n"))
    return out


def with_named_files(text: str, tools: Mapping[str, Tool], ctx: ToolContext, *, listing: bool = False) -> str:
    """``text`` followed by the files it names, each as fs-read shows it (none: ``text`` as is);
    ``listing`` (a session's first turn): first the workspace's top folder as fs-list shows it,
    unless ``text`` names a file or a folder of it."""
    head = ""
    paths = named_paths(text, ctx)
    if listing and "fs-list" in tools and not paths and not names_a_folder(text, ctx):
        out = run_call(ToolCall(id="named", name="fs-list", arguments='{"path": ""}'), tools, ctx)
        if not out.error:
            head = f"\n\n{LISTED}\n{out.text}"
    shown = _shown(paths, tools, ctx)  # none without fs-read
    if not shown:
        return text + head
    message = f"{text}{head}\n\n{HEAD}\n\n" + "\n".join(f"--- {p}\n{body}" for p, body in shown)
    more = [i for p, body in shown for i in imported_paths(p, body, ctx) if i not in paths]
    imported = _shown(list(dict.fromkeys(more))[: max(0, MAX_FILES - len(shown))], tools, ctx)
    if imported:
        message += f"\n{IMPORTED}\n\n" + "\n".join(f"--- {p}\n{body}" for p, body in imported)
    return message
