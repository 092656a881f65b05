"""Seconds between two event times, read from the log's ``t`` strings (``YYYY-MM-DDTHH:MM:SS.ffffffZ``,
UTC, as ``log.session_log.format_time`` writes them). Arithmetic only: a pure layer reads no clock
and imports no ``datetime`` (tests/test_layers.py)."""

from __future__ import annotations

import re

_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(?:Z|\+00:00)")


def seconds_between(earlier: str | None, later: str) -> float | None:
    """Seconds from one event time to a later one; None when either is missing or unreadable, or
    the later one is earlier (a clock that went back says nothing about idle time)."""
    start, end = epoch_seconds(earlier), epoch_seconds(later)
    if start is None or end is None or end < start:
        return None
    return end - start


def epoch_seconds(t: str | None) -> float | None:
    """A UTC event time as seconds since 1970-01-01; None for anything else (no zone, a bad date)."""
    m = _TIME.fullmatch(t or "")
    if m is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    if not (
        1 <= month <= 12 and 1 <= day <= _days_in(year, month) and hour < 24 and minute < 60 and second < 61
    ):
        return None
    fraction = float(m.group(7)) if m.group(7) else 0.0
    return _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second + fraction


def _days_in(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil)."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468
