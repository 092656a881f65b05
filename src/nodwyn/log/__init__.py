"""The append-only session log on disk: lock, redaction, fsync, index, attachments.

``Store(root)`` holds the sessions of a data root; ``store.create()`` and ``store.open(id)`` give a
``SessionLog``. See docs/adr/0003 to 0006 for the format, durability, redaction and index.
"""

from __future__ import annotations

from nodwyn.errors import CorruptLogError, LockedError, NotFoundError
from nodwyn.log.attachments import Attachments
from nodwyn.log.holdback import Holdback
from nodwyn.log.jsonl import CTX_ID, encode_event, parse_line, seq_prefix
from nodwyn.log.paths import data_root
from nodwyn.log.redact import NO_KNOWN, Known, RedactionReport, redact, redact_error, redact_held, redact_text
from nodwyn.log.seal import SealKey, check_session
from nodwyn.log.session_log import LOG_NAME, SessionInfo, SessionLog, utc_now
from nodwyn.log.store import Store

__all__ = [
    "CTX_ID", "LOG_NAME", "NO_KNOWN", "Attachments", "CorruptLogError", "Holdback", "Known", "LockedError",
    "NotFoundError", "RedactionReport", "SealKey", "SessionInfo", "SessionLog", "Store", "check_session",
    "data_root", "encode_event", "parse_line", "redact", "redact_error", "redact_held", "redact_text",
    "seq_prefix", "utc_now",
]  # fmt: skip
