"""The window benchmark's parts over real agent runs; the loaders are the product's
(``nodwyn.imports``: ``find``, ``load``, ``Run``). ``engine`` replays a run through the window,
``sliding`` is the baseline, ``measure`` sums the figures; see ``docs/bench-workloads.md``.
"""

from bench.workloads.engine import WorkloadError

from nodwyn.errors import ImportFormatError
from nodwyn.imports import Found, Run, find, load, load_all

__all__ = ["Found", "ImportFormatError", "Run", "WorkloadError", "find", "load", "load_all"]
