"""Suite-wide fixtures.

Every session a test writes under its ``tmp_path`` must replay: after each test, every request of
every session log found there is rebuilt from the log and its digest checked (every request of
every session the test suite creates replays). A digest mismatch fails the test. Logs
a test damaged on purpose (refused as corrupt, legacy or of an unknown version) are the business of
that test; a test that forges digests on purpose says so with ``@pytest.mark.forges_digests``.

Every event of those logs that decodes (``values.events.decode``) must also encode back to the same
payload (``to_data``), compared as sorted JSON: the typed vocabulary changes nothing on disk.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from nodwyn.errors import DigestMismatchError, NodwynError
from nodwyn.log import Store
from nodwyn.replay.exact import verify_all
from nodwyn.values.events import PAYLOADS

# the larger shared workloads beside the repository; NODWYN_WORKLOADS names them from a worktree elsewhere
WORKLOADS = Path(
    os.environ.get("NODWYN_WORKLOADS", Path(__file__).resolve().parents[1].parent / "shared" / "workloads")
)


@pytest.fixture(scope="session")
def workloads() -> Path:
    """The shared workloads folder (tests/imports, tests/whatif, tests/bench); skipped when absent."""
    if not (WORKLOADS / "FORMATS.md").exists():
        pytest.skip(f"the shared workloads are not at {WORKLOADS}")
    return WORKLOADS


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "forges_digests: the test records digests that must not verify")
    # The CLI processes the tests start stand for a person's, whose Ctrl-C arrives as SIGINT. A
    # suite started as a background job of a non-interactive shell inherits SIGINT ignored, and so
    # would every process it starts (Python then raises no KeyboardInterrupt): handle it here, so
    # they start with the default disposition (exec resets a handled signal, not an ignored one).
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


NEEDS = ("bwrap", "chromium", "node")  # what @pytest.mark.needs(...) may name


def _absent() -> dict[str, str]:
    """What the suite needs from the system and is not here: name -> the one line the tests that
    need it skip with, naming what to install. ``NODWYN_TEST_PATH`` replaces PATH for this look
    (tests/cli/test_setup_scripts.py checks the skips with an empty one)."""
    import os
    import shutil

    from tests.console.served import CHROMIUM

    from nodwyn.agent.sandbox import Sandbox, unavailable

    path = os.environ.get("NODWYN_TEST_PATH")
    absent = {}
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):  # as which() looks
        absent["chromium"] = (
            f"chromium is not installed ({CHROMIUM}): apt-get install chromium (./scripts/test does, as root)"
        )
    bwrap = shutil.which("bwrap", path=path)
    if bwrap is None:
        absent["bwrap"] = "bwrap is not installed: apt-get install bubblewrap (./scripts/test does, as root)"
    elif (why := unavailable(Sandbox(program=bwrap))) is not None:
        absent["bwrap"] = f"bwrap cannot run here ({why}): allow unprivileged user namespaces"
    if shutil.which("node", path=path) is None:
        absent["node"] = "node is not installed: apt-get install nodejs npm (./scripts/test does, as root)"
    return absent


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [f"missing: {line}" for line in _absent().values()]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test marked ``browser`` (it needs chromium) or ``needs("bwrap", "node", ...)`` skips, with
    one line naming what to install, where a program it needs is absent."""
    absent = _absent()
    if not absent:
        return
    for item in items:
        mark = item.get_closest_marker("needs")  # a test's own needs(...) overrides its module's
        wanted = list(mark.args) if mark is not None else []
        unknown = set(wanted) - set(NEEDS)
        if unknown:
            raise pytest.UsageError(
                f"{item.nodeid}: needs({', '.join(sorted(unknown))}): use {', '.join(NEEDS)}"
            )
        if item.get_closest_marker("browser") is not None:
            wanted.append("chromium")
        missing = [absent[name] for name in wanted if name in absent]
        if missing:
            item.add_marker(pytest.mark.skip(reason="; ".join(dict.fromkeys(missing))))


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


def _sorted(value: object) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def round_trip_mismatches(log_file: Path) -> list[str]:
    """Events of a log whose typed payload does not encode back to the bytes read."""
    found: list[str] = []
    for n, line in enumerate(log_file.read_bytes().splitlines(), 1):
        try:
            raw = orjson.loads(line)
            cls = PAYLOADS[raw["kind"]]
            payload = cls.from_data(raw["data"])
        except (NodwynError, orjson.JSONDecodeError, KeyError, TypeError):
            continue  # damaged on purpose: refused by the codec, that test's business
        if _sorted(payload.to_data()) != _sorted(raw["data"]):
            found.append(f"{log_file.parent.name} line {n} ({raw['kind']}) does not encode back")
    return found


@pytest.fixture(autouse=True)
def _every_session_replays(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[None]:
    yield
    if request.node.get_closest_marker("forges_digests"):
        return
    mismatches = _mismatches(tmp_path)
    for log_file in sorted(tmp_path.rglob("sessions/*/log.jsonl")):
        mismatches += round_trip_mismatches(log_file)
    assert not mismatches, (
        "requests that do not replay to their recorded digest, or events that do not encode back:\n"
        + "\n".join(mismatches)
    )
