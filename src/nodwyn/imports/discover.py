"""Finding the runs in a workload folder and loading each with its format's loader.

A folder holding ``events/event-*.json`` is one OpenHands conversation; a ``*.traj`` file is a
SWE-agent trajectory; a ``*.traj.json`` file is a mini-swe-agent trajectory, v1 or v2 as its
``trajectory_format`` says. Anything else (manifests, notes, scripts) is not a run. The argument
may be the whole workload folder, one source's folder, one conversation folder or one file.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from nodwyn.errors import ImportFormatError
from nodwyn.imports import claude_code, codex, mini_v1, mini_v2, openhands, sweagent
from nodwyn.imports.jsonfile import read_json, read_source
from nodwyn.imports.run import Run

_SNIFF_BYTES = 1 << 20  # a .jsonl file's first line is looked for in this many bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Found:
    path: Path
    name: str  # relative to the folder searched (its own name when a single run was given)
    kind: str  # "openhands", "swe-agent", "mini-swe-agent", "claude-code" or "codex"


def find(root: Path) -> list[Found]:
    """Every run under ``root``, in path order."""
    if not root.exists():
        raise ImportFormatError(
            f"{root}: no such file or folder; pass a workload folder such as ../shared/workloads"
        )
    if not root.is_dir() or openhands.is_conversation(root):  # a file, a FIFO, a device: one run
        kind = _kind(root)
        if kind is None:
            raise ImportFormatError(
                f"{root}: not a run (.traj, .traj.json, a Claude Code or Codex .jsonl, "
                "or an OpenHands events folder)"
            )
        return [Found(path=root, name=root.name, kind=kind)]
    out: list[Found] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        runs = {n: kind for n in (*sorted(dirnames), *sorted(filenames)) if (kind := _kind(here / n))}
        out.extend(
            Found(path=here / n, name=str((here / n).relative_to(root)), kind=k) for n, k in runs.items()
        )
        dirnames[:] = sorted(d for d in dirnames if d not in runs)  # a conversation folder is one run
    out.sort(key=lambda r: r.name)
    if not out:
        raise ImportFormatError(f"{root}: no runs found (.traj, .traj.json or OpenHands events folders)")
    return out


def _kind(path: Path) -> str | None:
    if path.is_dir():
        return "openhands" if openhands.is_conversation(path) else None
    if path.name.endswith(".traj.json"):
        return "mini-swe-agent"
    if path.name.endswith(".traj"):
        return "swe-agent"
    if path.name.endswith(".jsonl"):
        return _sniff(path)
    return None


def _sniff(path: Path) -> str | None:
    """A ``.jsonl`` file's format from its first line: a Codex rollout or a Claude Code transcript."""
    head = read_source(path, _SNIFF_BYTES, head=True)  # a FIFO or a device is refused, named
    try:
        first = orjson.loads(head.split(b"\n", 1)[0])
    except orjson.JSONDecodeError:
        # a rollout by its name; anything else unreadable is not taken for a run
        return "codex" if path.name.startswith("rollout-") else None
    if codex.is_rollout(first):
        return "codex"
    if claude_code.is_transcript(first):
        return "claude-code"
    return None


def load(found: Found) -> Run:
    if found.kind == "openhands":
        return openhands.load(found.path, found.name)
    if found.kind == "swe-agent":
        return sweagent.load(found.path, found.name)
    if found.kind == "codex":
        return codex.load(found.path, found.name)
    if found.kind == "claude-code":
        return claude_code.load(found.path, found.name)
    doc = read_json(found.path)
    fmt = doc.get("trajectory_format") if isinstance(doc, dict) else None
    loaders: dict[str, Callable[[Any, str, str], Run]] = {
        mini_v1.TRAJECTORY_FORMAT: mini_v1.load,
        mini_v2.TRAJECTORY_FORMAT: mini_v2.load,
    }
    if fmt not in loaders:
        raise ImportFormatError(
            f"{found.path}: trajectory_format {fmt!r} is not one we read ({', '.join(sorted(loaders))})"
        )
    return loaders[fmt](doc, str(found.path), found.name)


def load_all(root: Path) -> list[Run]:
    return [load(f) for f in find(root)]
