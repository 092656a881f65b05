"""What fits (ADR 0300): a request within the model's context, a task within the window.

Pure arithmetic on the window's own estimate (``estimate.py``): a request's need is its estimate
plus the reply cap it asks for, and it fits a model whose context holds both (the seed's v8 rule,
"so the prompt and the reply fit num_ctx"). A task (the person's message, with what was piped
before it) is never trimmed, so it must fit the context beside the system prompt, the whole
catalog and the reply cap: ``task_estimate`` is the estimate of a first request holding it alone.
"""

from __future__ import annotations

import orjson

from nodwyn.values.recipe import Recipe
from nodwyn.window import encode
from nodwyn.window.estimate import _tokens_of_bytes

_MESSAGE = len(b'{"content":[{"text":,"type":"text"}],"role":"user"}')  # a text message's wrapping


def need(estimate: int, max_output: int | None) -> int:
    """Tokens a request takes of a context: its estimate and the reply it lets the model write."""
    return estimate + (max_output or 0)


def task_estimate(recipe: Recipe, text: str) -> int:
    """The estimate of a request holding the recipe's system prompt, its whole catalog, its reply
    cap field and one message of ``text``: what a task costs the window before anything else."""
    max_output = recipe.limits.output_reserve if recipe.rules.output_cap else None
    over = encode.overhead(
        encode._system_bytes(recipe.system),
        encode._tools_bytes(recipe.tools),
        encode.max_output_bytes(max_output),
    )
    return _tokens_of_bytes(over + _MESSAGE + len(orjson.dumps(text)))
