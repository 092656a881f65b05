"""The session's wire name, and where each server family wants it.

The key is the SHA-256 of the session id: the same across a resume, and it says nothing else
(the id holds the start time). It goes only on the wire; the neutral request and its digest
never hold it, so a resumed session's requests keep their digests.
"""

from __future__ import annotations

import hashlib

from nodwyn.dialects.profiles import profile_for
from nodwyn.values.model import ModelEntry

# What Codex sends for a ChatGPT-plan credential: the plan's server routes on these.
PLAN_HEADERS = ("session-id", "thread-id", "x-client-request-id")


def session_key(session_id: str) -> str:
    """Hex SHA-256 of the session id."""
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


def key_fields(
    settings: ModelEntry, key: str | None, *, plan_usage: bool
) -> tuple[dict[str, str], dict[str, str]]:
    """(headers, body fields) that carry the key for this model entry.

    ``cache_key = "session"``: body ``prompt_cache_key`` and the session headers (the family's
    profile's: its own, else X-Session-Id and X-Session-Affinity);
    ``"header"``: the header only (servers that refuse unknown body fields); ``"off"`` or no key:
    nothing. A ChatGPT-plan credential adds Codex's three headers whenever the key is sent.
    """
    if key is None or settings.cache_key == "off":
        return {}, {}
    headers = dict.fromkeys(profile_for(settings).session_headers, key)
    if plan_usage:
        headers.update(dict.fromkeys(PLAN_HEADERS, key))
    body = {"prompt_cache_key": key} if settings.cache_key == "session" else {}
    return headers, body
