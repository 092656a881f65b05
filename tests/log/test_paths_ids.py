"""The data root comes from the environment passed in; session ids name their UTC start."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from nodwyn.errors import ConfigError
from nodwyn.log.ids import is_session_id, new_session_id, session_start_time
from nodwyn.log.paths import data_root, sessions_dir


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"NODWYN_HOME": "/srv/n", "XDG_DATA_HOME": "/x", "HOME": "/h"}, "/srv/n"),
        ({"XDG_DATA_HOME": "/x", "HOME": "/h"}, "/x/nodwyn"),
        ({"XDG_DATA_HOME": "relative", "HOME": "/h"}, "/h/.local/share/nodwyn"),
        ({"NODWYN_HOME": "", "HOME": "/h"}, "/h/.local/share/nodwyn"),
        ({"HOME": "/h"}, "/h/.local/share/nodwyn"),
    ],
)
def test_data_root(env: dict[str, str], expected: str) -> None:
    assert data_root(env) == Path(expected)
    assert sessions_dir(data_root(env)) == Path(expected) / "sessions"


def test_no_home_at_all_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="NODWYN_HOME"):
        data_root({})


def test_session_id_names_the_utc_start() -> None:
    moment = datetime(2026, 11, 29, 17, 7, 29, 999999, tzinfo=timezone(timedelta(hours=1)))
    sid = new_session_id(moment, token="0a1b2c3d")
    assert sid == "20261129T160729Z-0a1b2c3d"
    assert is_session_id(sid)
    assert session_start_time(sid) == datetime(2026, 11, 29, 16, 7, 29, tzinfo=UTC)


def test_session_ids_are_random_and_well_formed() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    ids = {new_session_id(now) for _ in range(200)}
    assert len(ids) == 200
    assert all(is_session_id(i) for i in ids)


@pytest.mark.parametrize(
    "bad", ["", "20261129T160729Z", "20261129T160729Z-0A1B2C3D", "x20261129T160729Z-0a1b2c3d"]
)
def test_not_session_ids(bad: str) -> None:
    assert not is_session_id(bad)


def test_naive_times_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        new_session_id(datetime(2026, 1, 1))  # noqa: DTZ001
