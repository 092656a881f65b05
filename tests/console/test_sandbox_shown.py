"""The console's transcript names the sandbox a session and each shell result recorded (ADR 0350)."""

from __future__ import annotations

from nodwyn.console.views import event_json
from nodwyn.values.events import Event

T = "2026-01-01T09:00:00Z"


def test_a_shell_result_names_its_sandbox() -> None:
    data = {"call_id": "s1", "name": "shell", "text": "[exit 0]", "error": False, "sandbox": "read-only"}
    assert event_json(Event(seq=4, t=T, kind="tool.result", ctx="main", data=data))["sandbox"] == "read-only"
    old = {"call_id": "s1", "name": "shell", "text": "[exit 0]", "error": False}
    assert "sandbox" not in event_json(Event(seq=4, t=T, kind="tool.result", ctx="main", data=old))


def test_the_session_start_names_sandbox_network_and_approval() -> None:
    data = {"model": "fake", "sandbox": "workspace-write", "network": False, "approval": "auto-edit"}
    text = event_json(Event(seq=1, t=T, kind="session.start", ctx="main", data=data))["text"]
    assert text.endswith(", sandbox workspace-write (no network), approval auto-edit")
