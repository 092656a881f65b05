"""The window: the pure fold from a session's events (and its recipe) to the provider-neutral
request and the record of what the build decided. No I/O, no clock, no configuration.

    w = Window(); w.feed(event) ...; b = w.build("main", origin=..., turn=TurnOptions(...))
    b.request, b.record, b.canonical, b.digest
"""

from nodwyn.window.fold import Build, TurnOptions, Window, build_window
from nodwyn.window.sizing import ConfiguredLimits, size_limits
from nodwyn.window.start import Start
from nodwyn.window.summaries import source_digest

__all__ = [
    "Build",
    "ConfiguredLimits",
    "Start",
    "TurnOptions",
    "Window",
    "build_window",
    "size_limits",
    "source_digest",
]
