"""Task and plan headers, and where the task and plan go.

From v15 (``Flag.IN_CONVERSATION``) each person's message is a user message under the task
header and each recorded plan a user message under the plan header; the system prompt never
changes. Before v15 the system prompt carried the current task (the latest person's message of
the window) and its plan (the latest plan since that message). From v6 (``Flag.HEADERS``) the
headers come from the recipe, where None means the default text; before v6 they are always the
default text, so older logs rebuild byte for byte.
"""

from __future__ import annotations

from nodwyn.values.recipe import Flag, Policy, Recipe

DEFAULT_TASK_HEADER = "# Task"
DEFAULT_PLAN_HEADER = "# Plan"


def task_header(recipe: Recipe, policy: Policy) -> str:
    if Flag.HEADERS in policy and recipe.task_header is not None:
        return recipe.task_header
    return DEFAULT_TASK_HEADER


def plan_header(recipe: Recipe, policy: Policy) -> str:
    if Flag.HEADERS in policy and recipe.plan_header is not None:
        return recipe.plan_header
    return DEFAULT_PLAN_HEADER


def under(header: str, text: str) -> str:
    """A text under its header: ``header``, a blank line, the text."""
    return f"{header}\n\n{text}"


def system_with_task(base: str, task: tuple[str, str] | None, plan: tuple[str, str] | None) -> str:
    """Before v15: the base system prompt, then the task and its plan, each under its header."""
    parts = [base]
    if task is not None:
        parts.append(under(*task))
    if plan is not None:
        parts.append(under(*plan))
    return "\n\n".join(parts)
