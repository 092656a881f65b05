"""Replay: exact replay proven by the recorded digest, the transcript of any log, reviewed
summaries. It reads only the log (README.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nodwyn import lazy

if TYPE_CHECKING:
    from nodwyn.replay.diagnose import diagnose_request, diagnose_session
    from nodwyn.replay.exact import Verdict, check_complete, replay_request, verify_all
    from nodwyn.replay.summaries import SummaryInfo, add_summary, list_summaries, revoke_summary
    from nodwyn.replay.tolerant import tolerant_events
    from nodwyn.replay.transcript import Damaged, in_words, label, transcript_json, transcript_lines

__all__ = [
    "Damaged", "SummaryInfo", "Verdict", "add_summary", "check_complete", "diagnose_request",
    "diagnose_session", "in_words", "label", "list_summaries", "replay_request", "revoke_summary",
    "tolerant_events", "transcript_json", "transcript_lines", "verify_all",
]  # fmt: skip

__getattr__ = lazy(__name__, {
    "diagnose": "diagnose_request diagnose_session",
    "exact": "Verdict check_complete replay_request verify_all",
    "summaries": "SummaryInfo add_summary list_summaries revoke_summary", "tolerant": "tolerant_events",
    "transcript": "Damaged in_words label transcript_json transcript_lines",
})  # fmt: skip
