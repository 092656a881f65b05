"""The append-only session log on disk: lock, redaction, fsync, index, attachments.

``Store(root)`` holds the sessions of a data root; ``store.create()`` and ``store.open(id)`` give a
``SessionLog``. See docs/adr/0003 to 0006 for the format, durability, redaction and index.
"""

from __future__ import annotations

from nodwyn.errors import CorruptLogError, LockedError, NotFoundError
from nodwyn.log.holdback import Holdback
from nodwyn.log.paths import data_root
from nodwyn.log.redact import RedactionReport, redact
from nodwyn.log.session_log import SessionInfo, SessionLog, utc_now
from nodwyn.log.store import Store

__all__ = [
    "CorruptLogError",
    "Holdback",
    "LockedError",
    "NotFoundError",
    "RedactionReport",
    "SessionInfo",
    "SessionLog",
    "Store",
    "data_root",
    "redact",
    "utc_now",
]
