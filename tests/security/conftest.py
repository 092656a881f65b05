"""The adversarial suite's one counting helper (see README.md).

Mark a test (or a whole module with ``pytestmark``) with ``@pytest.mark.attack("CLASS")``; every
test so marked is one case of that attack class, named by the test's name (parametrize ids
included). It *held* if the test passed and *failed* if it failed in setup, call or teardown;
skipped cases are not counted. When ``NODWYN_SECURITY_RESULTS`` names a file, the run writes the
cases there as JSON; ``bench/security_table.py`` runs this folder that way and writes docs/security.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

RESULTS_ENV = "NODWYN_SECURITY_RESULTS"
_CASES: dict[str, dict[str, Any]] = {}  # by node id, in run order


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    mark = item.get_closest_marker("attack")
    if mark is None:
        return report
    if not mark.args or not isinstance(mark.args[0], str):
        raise pytest.UsageError(
            f'{item.nodeid}: @pytest.mark.attack needs a class name, e.g. attack("shell")'
        )
    if report.skipped and report.when != "teardown":
        _CASES.pop(item.nodeid, None)
        return report
    if report.when == "call" or report.failed:
        row = _CASES.setdefault(
            item.nodeid, {"class": mark.args[0], "case": item.name, "test": item.nodeid, "held": True}
        )
        row["held"] = row["held"] and report.passed
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = os.environ.get(RESULTS_ENV)
    if target:
        body = json.dumps({"cases": list(_CASES.values())}, indent=1)
        Path(target).write_text(body + "\n", encoding="utf-8")
