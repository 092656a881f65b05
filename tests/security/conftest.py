"""The adversarial suite's counting helper (see README.md) and the setup its CLI cases share.

Mark a test (or a whole module with ``pytestmark``) with ``@pytest.mark.attack("CLASS")``; every
test so marked is one case of that attack class, named by the test's name (parametrize ids
included). It *held* if the test passed and *failed* if it failed in setup, call or teardown;
skipped cases are not counted. When ``NODWYN_SECURITY_RESULTS`` names a file, the run writes the
cases there as JSON; ``bench/security_table.py`` runs this folder that way and writes docs/security.md.

``person`` is the setup the tests that run the real ``nodwyn`` against a fake provider share.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Generator
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


def _person(tmp: Path, url: str, *, credential: tuple[str, str] | None = None) -> dict[str, str]:
    """A person's machine under ``tmp``: the workspace ``ws``, ``config.toml`` with one
    openai-chat model ``chat`` at ``url`` (the fake's) and a 20-second shell timeout, and the
    environment to run ``nodwyn`` in. ``credential`` (NAME, value): the model entry names the
    variable NAME, which the environment sets to value."""
    (tmp / "ws").mkdir(exist_ok=True)
    named = f'credential = "{credential[0]}"\n' if credential is not None else ""
    (tmp / "config.toml").write_text(
        f"""[control]
model = "chat"
[tools]
shell_timeout = 20
[models.chat]
api = "openai-chat"
model = "fake-model"
base_url = "{url}"
{named}context_size = 32000
"""
    )
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp),
        "NODWYN_HOME": str(tmp / "home"),
        "NODWYN_CONFIG": str(tmp / "config.toml"),
    }
    if credential is not None:
        env[credential[0]] = credential[1]
    return env


@pytest.fixture(scope="session")
def person() -> Callable[..., dict[str, str]]:
    return _person
