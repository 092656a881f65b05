"""Session ids: ``YYYYMMDDTHHMMSSZ-xxxxxxxx``, the UTC start time and 8 random hex digits."""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime
from typing import Final

SESSION_ID: Final = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{8}")


def new_session_id(now: datetime, token: str | None = None) -> str:
    """An id for a session started at ``now`` (aware; converted to UTC)."""
    if now.tzinfo is None:
        raise ValueError("session start time must be timezone-aware")
    suffix = token if token is not None else secrets.token_hex(4)
    sid = f"{now.astimezone(UTC):%Y%m%dT%H%M%SZ}-{suffix}"
    if not is_session_id(sid):
        raise ValueError(f"bad session id token {suffix!r}: need 8 lowercase hex digits")
    return sid


def is_session_id(text: str) -> bool:
    return SESSION_ID.fullmatch(text) is not None


def session_start_time(session_id: str) -> datetime:
    """The start time an id names (second precision, UTC)."""
    return datetime.strptime(session_id[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
