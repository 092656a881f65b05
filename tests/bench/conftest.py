"""Tests of bench/: the benchmark commands on the real runs of the workload corpus (NODWYN_WORKLOADS,
skipped when absent). ``bench`` is not an installed package, so the repository root goes on the
import path here."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# beside the repository; NODWYN_WORKLOADS names them from a worktree elsewhere
WORKLOADS = Path(os.environ.get("NODWYN_WORKLOADS", ROOT.parent / "shared" / "workloads"))

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def workloads() -> Path:
    if not (WORKLOADS / "FORMATS.md").exists():
        pytest.skip(f"the shared workloads are not at {WORKLOADS}")
    return WORKLOADS
