"""A reply on its way into the log as ``llm.resp``.

The log redacts every append, and a reply's reasoning_details go back to their provider byte for
byte in every later request. Details the redaction would change would be logged, and given back,
altered, and the provider would refuse them; so they are left out before the reply is logged, with
a note on the reply saying why, and the reply goes back with its thinking instead (seed amendment
2026-10-15). Every other part of a reply is logged as it came (the log redacts it as usual).
"""

from __future__ import annotations

import dataclasses

from nodwyn.log.redact import redact
from nodwyn.values.codec import block_to_json
from nodwyn.values.request import Response


def for_log(response: Response) -> tuple[Response, list[str]]:
    """``response`` without the reasoning_details blocks the log's redaction would change, and the
    notes (also on the response) saying what was left out and why."""
    kept = []
    added: list[str] = []
    for block in response.blocks:
        if block.type == "reasoning_details":
            _, report = redact(block_to_json(block))
            if report.changed:
                shapes = ", ".join(name for name, _ in report.replaced)
                added.append(
                    f"reasoning_details left out: the log's redaction would change them ({shapes}), "
                    "so they could not go back as they came; this reply goes back with its thinking"
                )
                continue
        kept.append(block)
    if not added:
        return response, []
    return dataclasses.replace(response, blocks=tuple(kept), notes=(*response.notes, *added)), added
