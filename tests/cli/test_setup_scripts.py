"""``./scripts/test`` does the whole set-up (issue 26, item 11): ``scripts/system-packages`` installs
Debian's chromium, bubblewrap, node and npm through apt as root, else names them in one line; the
browser tests skip with one line naming what to install; ``.ci/run`` is a thin call of it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "scripts" / "system-packages"


def bare_path(tmp_path: Path, uid: int) -> tuple[dict[str, str], Path]:
    """A PATH holding only a fake ``id`` and a fake ``apt-get`` that records its arguments (and
    installs nothing): none of the packages is there."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "apt-calls"
    (bin_dir / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (bin_dir / "apt-get").write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    env = {"PATH": str(bin_dir), "NODWYN_TEST_CHROMIUM": str(tmp_path / "no-chromium")}
    return env, calls


def test_as_root_it_installs_what_is_missing_through_apt(tmp_path: Path) -> None:
    env, calls = bare_path(tmp_path, 0)
    done = subprocess.run(["/bin/bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert calls.read_text().splitlines() == ["update -qq", "install -y -qq chromium bubblewrap nodejs npm"]
    # the fake installed nothing, so the one line says what is still missing
    assert done.stdout.splitlines()[-1].startswith("system-packages: not installed: chromium bubblewrap")


def test_without_root_it_names_what_to_install_in_one_line(tmp_path: Path) -> None:
    env, calls = bare_path(tmp_path, 1000)
    done = subprocess.run(["/bin/bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and not calls.exists()  # apt was not asked
    assert done.stdout.splitlines() == [
        "system-packages: not installed: chromium bubblewrap nodejs npm; install them "
        "(apt-get install chromium bubblewrap nodejs npm) or the tests that need them skip"
    ]


def test_with_everything_there_it_says_nothing(tmp_path: Path) -> None:
    env, calls = bare_path(tmp_path, 0)
    for tool in ("bwrap", "node", "npm"):
        (Path(env["PATH"]) / tool).write_text("#!/bin/sh\n")
        (Path(env["PATH"]) / tool).chmod(0o755)
    chromium = Path(env["NODWYN_TEST_CHROMIUM"])
    chromium.write_text("#!/bin/sh\n")
    chromium.chmod(0o755)
    done = subprocess.run(["/bin/bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "" and not calls.exists()


def test_the_browser_tests_skip_naming_chromium_where_it_is_absent(tmp_path: Path) -> None:
    env = {**os.environ, "NODWYN_TEST_CHROMIUM": str(tmp_path / "no-chromium")}
    test = ROOT / "tests" / "console" / "test_browser.py"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(test), "-q", "-rs", "-m", "browser", "-p", "no:cacheprovider"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skipped and all("chromium is not installed" in line for line in skipped)
    assert all("apt-get install chromium" in line for line in skipped)
    assert " passed" not in done.stdout and " failed" not in done.stdout


def test_tests_needing_bwrap_or_node_skip_naming_what_to_install(tmp_path: Path) -> None:
    """The shared marker (``@pytest.mark.needs``, tests/conftest.py): with neither bwrap nor node on
    the path the suite looks at, each such test skips with one line naming the package."""
    env = {**os.environ, "NODWYN_TEST_PATH": str(tmp_path / "empty")}
    tests = [
        ROOT / "tests" / "security" / "test_attack_sandbox.py",
        ROOT / "tests" / "mcp_tools" / "test_reference_servers.py",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *map(str, tests), "-q", "-rs", "-p", "no:cacheprovider",
         "-k", "absolute_path or dotdot or everything or without_bwrap_nothing"],
        env=env, capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    sandbox = [line for line in skipped if "test_attack_sandbox" in line]
    servers = [line for line in skipped if "test_reference_servers" in line]
    assert sandbox and all("bwrap is not installed: apt-get install bubblewrap" in line for line in sandbox)
    # node, bwrap or the npm packages (`npm ci`, which scripts/test runs), whichever is missing first
    assert servers and all("install" in line for line in servers)
    assert "1 passed" in done.stdout  # test_without_bwrap_nothing_runs says needs(): it ran


def test_ci_is_a_thin_call_of_the_test_command() -> None:
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if not line.startswith("#")]
    commands = [line.strip() for line in lines if line.strip()]
    assert commands == ["set -euo pipefail", 'cd "$(dirname "$0")/.."', 'exec ./scripts/test "$@"']
    assert "./scripts/system-packages" in (ROOT / "scripts" / "test").read_text()
