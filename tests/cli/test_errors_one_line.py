"""Every error the CLI reports is one line, whatever text its message carries."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodwyn.cli import main, one_line


def test_newlines_in_a_message_are_escaped() -> None:
    assert one_line("bad\nline\r\nhere") == "bad\\nline\\r\\nhere"


def test_a_session_name_with_a_newline_is_reported_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NODWYN_HOME", str(tmp_path))
    with pytest.raises(SystemExit) as exit_info:
        main(["log", "no\nsuch"])
    assert exit_info.value.code == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("nodwyn: ")
