"""Loaders that turn real agent runs into neutral conversations, and the window benchmark's parts.

``find(folder)`` lists the runs in a workload folder, ``load(found)`` reads one into a ``Run``
(system prompt, tool catalog, messages as the model saw them before each of its replies). One
module per format: ``mini_v1``, ``mini_v2``, ``sweagent``, ``openhands``; see
``docs/bench-workloads.md``.
"""

from bench.workloads.discover import Found, find, load, load_all
from bench.workloads.run import Run, WorkloadError

__all__ = ["Found", "Run", "WorkloadError", "find", "load", "load_all"]
