"""Stats: pure totals, cache rate, cost and per-request miss diagnosis over session events."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nodwyn import lazy

if TYPE_CHECKING:
    from nodwyn.stats.diagnosis import (
        IDLE_WORTH_SAYING,
        MIN_CACHEABLE,
        Diagnosis,
        Rebuilt,
        diagnose,
        diagnose_all,
    )
    from nodwyn.stats.evals import Cell, Difference, Interval, RunFigures, cells, differences
    from nodwyn.stats.figures import Overview, cache_figures, cost_text, describe, figures_json, overview
    from nodwyn.stats.prefix import Encoder, chunks, common_bytes, common_parts
    from nodwyn.stats.times import seconds_between
    from nodwyn.stats.totals import Aggregator, RequestRow, Sums, Totals, cache_rate, contributes, percent
    from nodwyn.stats.views import diagnosis_json, row_json, totals_json

__all__ = [
    "IDLE_WORTH_SAYING", "MIN_CACHEABLE", "Aggregator", "Cell", "Diagnosis", "Difference", "Encoder",
    "Interval", "Overview", "Rebuilt", "RequestRow", "RunFigures", "Sums", "Totals", "cache_figures",
    "cache_rate", "cells", "chunks", "common_bytes", "common_parts", "contributes", "cost_text", "describe",
    "diagnose", "diagnose_all", "diagnosis_json", "differences", "figures_json", "overview", "percent",
    "row_json", "seconds_between", "totals_json",
]  # fmt: skip

__getattr__ = lazy(__name__, {
    "diagnosis": "IDLE_WORTH_SAYING MIN_CACHEABLE Diagnosis Rebuilt diagnose diagnose_all",
    "evals": "Cell Difference Interval RunFigures cells differences",
    "figures": "Overview cache_figures cost_text describe figures_json overview",
    "prefix": "Encoder chunks common_bytes common_parts", "times": "seconds_between",
    "totals": "Aggregator RequestRow Sums Totals cache_rate contributes percent",
    "views": "diagnosis_json row_json totals_json",
})  # fmt: skip
