"""Recording a session: the one path from an event or a built request to the log and back to the
window (``Recorder``), the events that start and resume a session, and where a resumed session's
window starts. See README.md."""

from nodwyn.record.recorder import EventLog, Recorder, resume_session, start_session
from nodwyn.record.resume import last_model, resume_point, resumed_events

__all__ = [
    "EventLog", "Recorder", "last_model", "resume_point", "resume_session", "resumed_events",
    "start_session",
]  # fmt: skip
