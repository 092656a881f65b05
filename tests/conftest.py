"""Suite-wide fixtures.

Every session a test writes under its ``tmp_path`` must replay: after each test, every request of
every session log found there is rebuilt from the log and its digest checked (every request of
every session the test suite creates replays). A digest mismatch fails the test. Logs
a test damaged on purpose (refused as corrupt, legacy or of an unknown version) are the business of
that test; a test that forges digests on purpose says so with ``@pytest.mark.forges_digests``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nodwyn.errors import DigestMismatchError, NodwynError
from nodwyn.log import Store
from nodwyn.replay.exact import verify_all


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "forges_digests: the test records digests that must not verify")


def _mismatches(tmp: Path) -> list[str]:
    found: list[str] = []
    for log_file in sorted(tmp.rglob("sessions/*/log.jsonl")):
        session_dir = log_file.parent
        try:
            with Store(session_dir.parent.parent).open(session_dir.name) as log:
                for verdict in verify_all(log):
                    if isinstance(verdict.error, DigestMismatchError):
                        found.append(f"{session_dir.name} seq {verdict.seq}: {verdict.error}")
        except NodwynError:
            continue  # not a session log, or one the test damaged on purpose
    return found


@pytest.fixture(autouse=True)
def _every_session_replays(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[None]:
    yield
    if request.node.get_closest_marker("forges_digests"):
        return
    mismatches = _mismatches(tmp_path)
    assert not mismatches, "requests that do not replay to their recorded digest:\n" + "\n".join(mismatches)
