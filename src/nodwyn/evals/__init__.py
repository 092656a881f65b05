"""Evals: task × variant grids run as independent ordinary sessions (``nodwyn eval``; ADRs 0400-0404)."""

from nodwyn.evals.results import Report, report
from nodwyn.evals.runner import Engine, run_eval
from nodwyn.evals.spec import Spec, load_spec

__all__ = ["Engine", "Report", "Spec", "load_spec", "report", "run_eval"]
