"""Refusing what does not fit (ADR 0300), in one line with its size and what to do instead.

A task (with what was piped before it) is never trimmed, so one larger than the window's high water
would hold every later request above it: it is refused before the session records it (``nodwyn
run`` and ``resume``: before the session is even written). A request whose estimate and reply cap
pass the model's context is refused before it is recorded or sent (``Recorder.request(context=)``),
whatever the model's API, the in-process one included.
"""

from __future__ import annotations

from nodwyn.errors import TooLargeError
from nodwyn.values.model import ModelSettings
from nodwyn.values.recipe import Recipe
from nodwyn.window.room import task_estimate

ADVICE = (
    'save the input to a file and name its path in the task (`nodwyn run "summarise notes.txt"`) '
    "so the agent reads it in ranges, or pick a model with a larger context (-m NAME)"
)


def check_task(recipe: Recipe, model: ModelSettings, text: str) -> None:
    """Refuse a task the window cannot hold under its high water."""
    est = task_estimate(recipe, text)
    high = recipe.limits.high_water
    if est > high:
        raise TooLargeError(
            f"the task is about {est:,} tokens ({len(text.encode()):,} bytes with what was piped in), "
            f"more than the window's {high:,} (high water for model {model.name!r}, "
            f"{model.context_size:,}-token context); nothing was recorded: {ADVICE}"
        )
