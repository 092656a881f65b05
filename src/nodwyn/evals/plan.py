"""The order an eval's runs are started in (pure): balanced or shuffled with a seed.

``balanced`` is the seed's order within a task: the variants forward, then backward, then forward
(A B, B A, A B … for two; ABC CBA … for more), so drift in time (a warming cache, a loaded
machine) falls on every variant alike. ``random`` shuffles the whole grid with ``seed``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from nodwyn.evals.spec import Spec


@dataclass(frozen=True, slots=True, kw_only=True)
class RunKey:
    task: str
    variant: str
    run: int  # 1-based, per task and variant

    def label(self) -> str:
        return f"{self.task}/{self.variant}/{self.run}"


def plan(spec: Spec) -> list[RunKey]:
    names = [v.name for v in spec.variants]
    keys = [
        RunKey(task=task.name, variant=name, run=r + 1)
        for task in spec.tasks
        for r in range(spec.runs)
        for name in (names if r % 2 == 0 else reversed(names))
    ]
    if spec.order == "random":
        random.Random(spec.seed).shuffle(keys)
    return keys
