"""Tests of nodwyn.whatif: policies on small hand-made conversations, the engine and the measures,
and real runs of the larger shared workloads (NODWYN_WORKLOADS, skipped when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# beside the repository; NODWYN_WORKLOADS names them from a worktree elsewhere
WORKLOADS = Path(os.environ.get("NODWYN_WORKLOADS", ROOT.parent / "shared" / "workloads"))


@pytest.fixture(scope="session")
def workloads() -> Path:
    if not (WORKLOADS / "FORMATS.md").exists():
        pytest.skip(f"the shared workloads are not at {WORKLOADS}")
    return WORKLOADS
