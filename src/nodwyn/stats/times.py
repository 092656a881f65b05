"""Seconds between two event times, read from the log's ``t`` strings (``YYYY-MM-DDTHH:MM:SS.ffffffZ``,
UTC, as ``log.session_log.format_time`` writes them), with ``calendar``'s clock-free arithmetic: a
pure layer reads no clock and imports no ``datetime`` or ``time`` (tests/test_layers.py)."""

from __future__ import annotations

import calendar
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
        year >= 1
        and 1 <= month <= 12
        and 1 <= day <= calendar.monthrange(year, month)[1]
        and hour < 24
        and minute < 60
        and second < 61
    ):
        return None
    fraction = float(m.group(7)) if m.group(7) else 0.0
    return calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)) + fraction
