"""The window: the pure fold from a session's events (and its recipe) to the provider-neutral
request and the record of what the build decided. Usage and rules: README.md; words: docs/glossary.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nodwyn import lazy
from nodwyn.window.build import Build, Decision, Window, build_window
from nodwyn.window.sizing import ConfiguredLimits, size_limits
from nodwyn.window.start import Start, recorded_start
from nodwyn.window.summaries import source_digest
from nodwyn.window.turn import TurnOptions, recorded_turn, recorded_withheld

if TYPE_CHECKING:
    from nodwyn.window.encode import max_output_bytes, overhead
    from nodwyn.window.room import need, task_estimate
    from nodwyn.window.units import Tuning

__getattr__ = lazy(__name__, {
    "encode": "max_output_bytes overhead", "room": "need task_estimate", "units": "Tuning",
})  # fmt: skip

__all__ = [
    "Build", "ConfiguredLimits", "Decision", "Start", "Tuning", "TurnOptions", "Window", "build_window",
    "max_output_bytes", "need", "overhead", "recorded_start", "recorded_turn", "recorded_withheld",
    "size_limits", "source_digest", "task_estimate",
]  # fmt: skip
