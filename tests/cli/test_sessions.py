"""``nodwyn sessions`` and ``nodwyn log``: output, ranges, and one-line errors with distinct exit codes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from nodwyn.cli import main
from nodwyn.log import Store
from nodwyn.values.events import Note, UserMsg


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NODWYN_HOME", str(tmp_path))
    return tmp_path


def _session(root: Path, n: int) -> str:
    with Store(root, fsync=False).create() as log:
        for i in range(n):
            log.append((UserMsg if i % 2 == 0 else Note)(text=f"message {i}"), ctx="main")
        return log.id


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_sessions_lists_id_start_model_requests_cache_cost_first_message(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = _session(home, 3), _session(home, 5)
    code, out, err = _run(["sessions"], capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == ["SESSION", "START", "MODEL", "REQS", "CACHE", "COST", "FIRST", "MESSAGE"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert set(rows) == {first, second}
    assert rows[second][3:] == ["-", "0", "-", "-", "message", "0"]  # no model request yet
    code, out, _ = _run(["sessions", "--json"], capsys)
    items = {d["id"]: d for d in map(orjson.loads, out.splitlines())}
    with Store(home).open(second) as log:
        events = list(log.read())
    assert items[second]["events"] == 5
    assert items[second]["start"] == events[0].t
    assert items[second]["last"] == events[-1].t
    assert items[second]["size"] == (home / "sessions" / second / "log.jsonl").stat().st_size


def test_sessions_with_none(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["sessions"], capsys) == (0, f"no sessions under {home / 'sessions'}\n", "")
    assert _run(["sessions", "--json"], capsys) == (0, "", "")


def test_log_json_prints_the_stored_lines(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sid = _session(home, 6)
    raw = (home / "sessions" / sid / "log.jsonl").read_text()
    code, out, err = _run(["log", sid, "--json"], capsys)
    assert (code, out, err) == (0, raw, "")
    code, out, _ = _run(["log", sid[:20], "--json", "--from", "2", "--to", "4"], capsys)
    assert out == "".join(raw.splitlines(keepends=True)[1:4])
    code, out, _ = _run(["log", "latest", "--json", "--from", "6"], capsys)
    assert [orjson.loads(x)["seq"] for x in out.splitlines()] == [6]


def test_log_text_has_one_line_per_event(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sid = _session(home, 4)
    code, out, _ = _run(["log", sid, "--to", "2"], capsys)
    lines = out.splitlines()
    assert code == 0 and len(lines) == 2
    assert lines[0].split()[:4] == ["1", lines[0].split()[1], "main", "user.msg"]
    assert lines[1].split()[3] == "note" and '"message 1"' in lines[1]


def _error(code: int, err: str, expected_code: int) -> str:
    assert code == expected_code
    assert err.startswith("nodwyn: ") and err.count("\n") == 1
    return err


def test_unknown_session_is_exit_3(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["log", "20260101T000000Z-deadbeef"], capsys)
    assert "no session 20260101T000000Z-deadbeef" in _error(code, err, 3)
    assert out == ""
    sid = _session(home, 2)
    code, _, err = _run(["log", sid, "--from", "3"], capsys)
    assert f"session {sid} has no seq 3 (its last seq is 2)" in _error(code, err, 3)
    code, _, err = _run(["log", "2"], capsys)  # a unique prefix
    assert code == 0


def test_ambiguous_prefix_is_not_found(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _session(home, 1)
    _session(home, 1)
    code, _, err = _run(["log", "20"], capsys)
    assert "matches 2 sessions" in _error(code, err, 3)


def test_corrupt_log_is_exit_5_naming_the_line(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sid = _session(home, 3)
    path = home / "sessions" / sid / "log.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = b'{"seq":2,' + b"x" * (len(lines[1]) - 10) + b"\n"
    path.write_bytes(b"".join(lines))
    code, out, err = _run(["log", sid, "--json"], capsys)
    assert f"session {sid}: the line at byte {len(lines[0])} (seq 2) is not JSON" in _error(code, err, 5)
    assert out == lines[0].decode()  # what precedes the damage is printed


def test_torn_tail_is_reported_not_printed(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sid = _session(home, 2)
    with open(home / "sessions" / sid / "log.jsonl", "ab") as fh:
        fh.write(b'{"seq":3,"t":"2026')
    code, out, err = _run(["log", sid, "--json"], capsys)
    assert code == 0 and len(out.splitlines()) == 2
    assert "18 bytes after the last whole event (seq 2) are not an event" in err


def test_reading_needs_no_lock(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Store(home, fsync=False).create() as writer:
        writer.append(Note(text="live"))
        code, out, _ = _run(["log", writer.id, "--json"], capsys)
        assert code == 0 and orjson.loads(out)["data"] == {"text": "live"}


def test_the_installed_command_exits_with_the_error_code(home: Path) -> None:
    env = {**os.environ, "NODWYN_HOME": str(home)}
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from nodwyn.cli import main; main(sys.argv[1:])", "log", "nope"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 3
    assert proc.stdout == ""
    assert (
        proc.stderr
        == f"nodwyn: no session matches 'nope' in {home / 'sessions'}; `nodwyn sessions` lists them\n"
    )
