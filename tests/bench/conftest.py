"""Tests of bench/: the benchmark commands on the real runs of the shared workloads (the suite's
``workloads`` fixture, skipped when absent). ``bench`` is not an installed package, so the
repository root goes on the import path here."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
