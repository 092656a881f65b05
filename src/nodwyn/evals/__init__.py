"""Evals: task × variant grids run as independent ordinary sessions (``nodwyn eval``; ADRs 0400-0404)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nodwyn import lazy

if TYPE_CHECKING:
    from nodwyn.evals.records import Recorded
    from nodwyn.evals.results import Report, report
    from nodwyn.evals.runner import Engine, run_eval
    from nodwyn.evals.spec import Spec, load_spec
    from nodwyn.evals.table import report_table

__all__ = ["Engine", "Recorded", "Report", "Spec", "load_spec", "report", "report_table", "run_eval"]

__getattr__ = lazy(__name__, {
    "records": "Recorded", "results": "Report report", "runner": "Engine run_eval",
    "spec": "Spec load_spec", "table": "report_table",
})  # fmt: skip
