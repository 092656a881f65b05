"""Testing helpers for nodwyn's own tests and for extension authors (see README.md).

``SessionBuilder`` writes a session event by event through the one recording path (on disk or in
memory), so every request it records replays for real. ``ScriptedBackend`` answers a model's
requests from a script over a real fake provider on 127.0.0.1 and fails on an unexpected or an
unused step. ``recipe()`` makes a test recipe; ``isolated_env(root)`` a person's environment under
one folder.
"""

from nodwyn.testing.backend import ScriptedBackend, ScriptMismatch, Step
from nodwyn.testing.env import isolated_env
from nodwyn.testing.memory import MemoryLog
from nodwyn.testing.session import LIMITS, ORIGIN, TOOLS, USAGE, Sent, SessionBuilder, recipe

__all__ = [
    "LIMITS", "ORIGIN", "TOOLS", "USAGE", "MemoryLog", "ScriptMismatch", "ScriptedBackend", "Sent",
    "SessionBuilder", "Step", "isolated_env", "recipe",
]  # fmt: skip
