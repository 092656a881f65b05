"""Strategies over the turn loop: hygiene folds (pure rules here), and the texts the planner,
compaction and sub-agent strategies send. The loop (``agent.loop``) runs them.

Hygiene folds replace a tool result the model no longer needs with a one-line note (``result.fold``):
the log keeps the original, ``recall`` brings it back. Two rules:

* a failed attempt: an error result of a tool that later succeeded on the same target (path,
  command or pattern) in the same context;
* a stale read: an ``fs-read`` of a file that was later read whole again, written or edited.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

PLANNER_ASK = "Before acting, write the plan for this task: the steps you will take, one per line."
NOTE_ASK = (
    "Write a handover note so this task can continue in a fresh context: what was asked, what is "
    "done, what remains, and the facts needed (files, findings, commands). Plain text, no tool calls."
)
NOTE_SYSTEM_HEAD = "# Handover note (from the conversation so far)"
CONTINUE_ASK = "Continue the task from the handover note in your instructions."
SUB_AGENT_SYSTEM = (
    "You are a sub-agent. Do the task you are given with the tools offered, then answer with what "
    "you found, in a few lines: that answer is all the caller will see."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ResultRecord:
    """What hygiene needs to know about one tool result in the log."""

    seq: int
    ctx: str
    name: str
    path: str | None  # the file it read, wrote or edited
    target: str | None  # what it acted on: the path, the command or the pattern
    whole: bool  # an fs-read of the whole file
    error: bool
    first_line: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Fold:
    target: int
    text: str


def hygiene_folds(records: Sequence[ResultRecord], folded: Iterable[int], ctx: str) -> list[Fold]:
    """The folds due in ``ctx`` now, oldest first; ``folded`` are seqs already folded."""
    done = set(folded)
    mine = [r for r in records if r.ctx == ctx]
    folds: list[Fold] = []
    for i, r in enumerate(mine):
        if r.seq in done:
            continue
        later = mine[i + 1 :]
        if r.error:
            fixed = next(
                (x for x in later if x.name == r.name and x.target == r.target and not x.error), None
            )
            if fixed is not None:
                folds.append(
                    Fold(
                        target=r.seq,
                        text=f"[failed {r.name} attempt folded (superseded at seq {fixed.seq}): "
                        f"{r.first_line[:160]}; recall seq {r.seq} to see it]",
                    )
                )
            continue
        if r.name == "fs-read" and r.path is not None:
            newer = next(
                (
                    x
                    for x in later
                    if x.path == r.path
                    and not x.error
                    and ((x.name == "fs-read" and x.whole) or x.name in ("fs-write", "fs-edit"))
                ),
                None,
            )
            if newer is not None:
                folds.append(
                    Fold(
                        target=r.seq,
                        text=f"[stale read of {r.path} folded ({newer.name} at seq {newer.seq}); "
                        f"recall seq {r.seq} to see it]",
                    )
                )
    return folds


def note_system(note: str, base: str) -> str:
    """A compaction narrowing's system prompt: it starts from the note, then the session's own."""
    return f"{NOTE_SYSTEM_HEAD}\n{note.strip()}\n\n{base}"
