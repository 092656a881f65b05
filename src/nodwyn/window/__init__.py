"""The window: the pure fold from a session's events (and its recipe) to the provider-neutral
request and the record of what the build decided. No I/O, no clock, no configuration.

    w = Window(); w.feed(event) ...; b = w.build("main", origin=..., turn=TurnOptions(...))
    b.request, b.record, b.canonical, b.digest, b.seqs

Replay rebuilds the request an ``llm.req`` at SEQ recorded by feeding the events before SEQ and
building with ``ctx=event.ctx``, ``origin=origin_from_json(data["origin"])``,
``turn=recorded_turn(data)`` and ``withheld=recorded_withheld(data)``. Decisions: docs/adr/0010-0022.
"""

from nodwyn.window.fold import Build, Window, build_window
from nodwyn.window.sizing import ConfiguredLimits, size_limits
from nodwyn.window.start import Start, recorded_start
from nodwyn.window.summaries import source_digest
from nodwyn.window.turn import TurnOptions, recorded_turn, recorded_withheld

__all__ = [
    "Build",
    "ConfiguredLimits",
    "Start",
    "TurnOptions",
    "Window",
    "build_window",
    "recorded_start",
    "recorded_turn",
    "recorded_withheld",
    "size_limits",
    "source_digest",
]
