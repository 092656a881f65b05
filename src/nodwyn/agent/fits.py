"""Refusing what does not fit (ADR 0300), in one line with its size and what to do instead.

A task (with what was piped before it) is never trimmed, so one that could not be sent even alone
in the window is refused before the session records it (``nodwyn run`` and ``resume``: before the
session is even written). A request whose estimate and reply cap pass the model's context is
refused before it is recorded or sent (``Recorder.request(context=)``), whatever the model's API,
the in-process one included.
"""

from __future__ import annotations

from nodwyn.errors import TooLargeError
from nodwyn.values.model import ModelEntry
from nodwyn.values.recipe import Recipe
from nodwyn.window import need, task_estimate

ADVICE = (
    'save the input to a file and name its path in the task (`nodwyn run "summarise notes.txt"`) '
    "so the agent reads it in ranges, or pick a model with a larger context (-m NAME)"
)


def check_task(recipe: Recipe, model: ModelEntry, text: str) -> None:
    """Refuse a task that could not be sent: alone in the window, beside the system prompt, the
    whole catalog and the reply cap, it would pass the model's context."""
    est = task_estimate(recipe, text)
    cap = recipe.limits.output_reserve if recipe.rules.output_cap else None
    if need(est, cap) > model.context_size:
        reply = f" with a {cap:,}-token reply cap" if cap else ""
        raise TooLargeError(
            f"the task is about {est:,} tokens ({len(text.encode()):,} bytes with what was piped in), "
            f"more than model {model.name!r}'s {model.context_size:,}-token context{reply}; "
            f"nothing was recorded: {ADVICE}"
        )
