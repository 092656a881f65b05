"""The window: the pure fold from a session's events (and its recipe) to the provider-neutral
request and the record of what the build decided. Usage and rules: README.md; words: docs/glossary.md.
"""

from nodwyn.window.fold import Build, Decision, Window, build_window
from nodwyn.window.sizing import ConfiguredLimits, size_limits
from nodwyn.window.start import Start, recorded_start
from nodwyn.window.summaries import source_digest
from nodwyn.window.turn import TurnOptions, recorded_turn, recorded_withheld

__all__ = [
    "Build",
    "ConfiguredLimits",
    "Decision",
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
