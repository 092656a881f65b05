"""Task and plan headers, and where the task and plan go.

From v15 (``Rules.in_conversation``) each person's message is a user message under the task
header and each recorded plan a user message under the plan header; the system prompt never
changes. Before v15 the system prompt carried the current task (the latest person's message of
the window) and its plan (the latest plan since that message). From v6 (``Rules.headers``) the
headers come from the recipe, where None means the default text; before v6 they are always the
default text, so older logs rebuild byte for byte. With ``Rules.kept_headers`` (a flag of its own,
ADR 0113) a message or plan keeps the header of the recipe in force when it was recorded, so a
resume that changes a header leaves earlier requests' messages as they were; without it every
message takes the current recipe's header, as older recipes were built.
"""

from __future__ import annotations

from dataclasses import replace

from nodwyn.values.recipe import Recipe, Rules
from nodwyn.window.entries import _Entry

_DEFAULT_TASK_HEADER = "# Task"
_DEFAULT_PLAN_HEADER = "# Plan"


def task_header(recipe: Recipe, rules: Rules) -> str:
    return recipe.task_header if rules.headers and recipe.task_header is not None else _DEFAULT_TASK_HEADER


def plan_header(recipe: Recipe, rules: Rules) -> str:
    return recipe.plan_header if rules.headers and recipe.plan_header is not None else _DEFAULT_PLAN_HEADER


def _with_header(entry: _Entry, recipe: Recipe) -> _Entry:
    """A person's message or a plan with the header ``recipe`` (in force when it was fed) gives it."""
    rules = recipe.rules
    header = task_header(recipe, rules) if entry.kind == "user" else plan_header(recipe, rules)
    return replace(entry, header=header)


def kept(entry: _Entry, current: str, rules: Rules) -> str:
    """The header ``entry`` is shown under: its own under ``kept_headers``, else ``current``."""
    if rules.kept_headers and entry.header is not None:
        return entry.header
    return current


def under(header: str, text: str) -> str:
    """A text under its header: ``header``, a blank line, the text."""
    return f"{header}\n\n{text}"


def _system_with_task(base: str, task: tuple[str, str] | None, plan: tuple[str, str] | None) -> str:
    """Before v15: the base system prompt, then the task and its plan, each under its header."""
    return "\n\n".join([base, *(under(*part) for part in (task, plan) if part is not None)])
