"""A reply on its way into the log as ``llm.resp``.

The log redacts every append, and a reply's reasoning blocks (OpenRouter reasoning_details,
Anthropic thinking and redacted thinking, Responses encrypted reasoning) go back to their provider
byte for byte in every later request. A block the redaction would change would be logged, and given
back, altered, and the provider would refuse its signature; so it is left out before the reply is
logged, with a note on the reply saying why, and the reply goes back with its thinking instead
(every kind of block: nothing unredacted may reach the log). Every other part of a reply is logged
as it came (the log redacts it as usual).
"""

from __future__ import annotations

import dataclasses

from nodwyn.log import NO_KNOWN, Known, redact
from nodwyn.values.codec import block_to_json
from nodwyn.values.request import Response


def for_log(response: Response, known: Known = NO_KNOWN) -> tuple[Response, list[str]]:
    """``response`` without the reasoning blocks the log's redaction would change, and the notes
    (also on the response) saying what was left out and why."""
    kept = []
    added: list[str] = []
    for block in response.blocks:
        _, report = redact(block_to_json(block), known)
        if report.changed:
            shapes = ", ".join(name for name, _ in report.replaced)
            added.append(
                f"{block.type} left out: the log's redaction would change it ({shapes}), "
                "so it could not go back as it came; this reply goes back with its thinking"
            )
            continue
        kept.append(block)
    if not added:
        return response, []
    return dataclasses.replace(response, blocks=tuple(kept), notes=(*response.notes, *added)), added
