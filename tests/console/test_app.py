"""The console's routes over real logs, without a browser."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from nodwyn.cli import cli
from nodwyn.console.server import check_host
from nodwyn.errors import ConfigError
from nodwyn.log import Store

from .conftest import Writer
from .served import Served

# The Writer records placeholder digests: these tests are about the page, not about replay.


def _session(store: Store) -> Writer:
    w = Writer(store.create())
    w.user("Fix the failing test in tests/test_app.py")
    first = w.req()
    w.resp(first, "", call=True, prompt_tokens=4000, cached_tokens=0, output_tokens=30)
    w.tool("def test_app():\n    assert app() == 2\n" * 50)
    w.turn(5000, 3968)
    w.user("Now explain the fix")
    w.turn(5200, 4992, text="The fix changes app() to return 2.")
    return w


def test_poll_returns_totals_rows_and_the_transcript_pages(store: Store, console: Served) -> None:
    w = _session(store)
    with httpx.Client(base_url=console.url) as c:
        poll = c.get(f"/api/s/{w.id}/poll", params={"after": 0}).json()
        t = poll["totals"]
        assert t["all"]["rate"] == pytest.approx((0 + 3968 + 4992) / (4000 + 5000 + 5200))
        assert t["turns"] == 2 and len(poll["rows"]) == 3
        assert poll["last_seq"] == w.log.last_seq
        tail = c.get(f"/api/s/{w.id}/events", params={"limit": 3}).json()
        assert [e["seq"] for e in tail["events"]] == [w.log.last_seq - 2, w.log.last_seq - 1, w.log.last_seq]
        older = c.get(f"/api/s/{w.id}/events", params={"before": tail["first"], "limit": 3}).json()
        assert older["events"][-1]["seq"] == tail["first"] - 1

        new = w.turn(5300, 5184, text="late reply")
        again = c.get(f"/api/s/{w.id}/poll", params={"after": poll["last_seq"]}).json()
        assert [r["seq"] for r in again["rows"]] == [new]
        assert [e["kind"] for e in again["events"]] == ["llm.req", "llm.resp"]
        assert again["events"][1]["text"] == "late reply"
        assert again["totals"]["fed"] == w.log.last_seq  # fed once each, not re-read


def test_reasoning_blocks_never_leave_the_server(store: Store, console: Served) -> None:
    w = _session(store)
    with httpx.Client(base_url=console.url) as c:
        bodies = [
            c.get(f"/api/s/{w.id}/poll").text,
            c.get(f"/api/s/{w.id}/events", params={"limit": 1000}).text,
        ]
    assert all("SIGNATURE-XYZ" not in b for b in bodies)
    assert '"blocks":1' in bodies[1]  # counted, not shown
    assert "thinking about" in bodies[1]  # thinking is shown


def test_read_only_loopback_and_strict_headers(store: Store, console: Served) -> None:
    w = _session(store)
    with httpx.Client(base_url=console.url) as c:
        page = c.get(f"/s/{w.id}")
        assert page.status_code == 200 and w.id in page.text
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert c.post(f"/api/s/{w.id}/poll").status_code == 405
        assert c.get("/", headers={"Host": "evil.example"}).status_code == 400
        missing = c.get("/api/s/20990101T000000Z-deadbeef/poll")
        assert missing.status_code == 404 and "no session" in missing.json()["error"]
        assert c.get("/api/s/..%2F..%2Fetc/poll").status_code == 404
        listing = c.get("/api/sessions").json()["sessions"]
        assert [s["id"] for s in listing] == [w.id]
        assert listing[0]["title"] == "Fix the failing test in tests/test_app.py"


def test_console_refuses_non_loopback_hosts_unless_allowed(root: Path) -> None:
    check_host("127.0.0.1", allow_remote=False)
    check_host("::1", allow_remote=False)
    check_host("localhost", allow_remote=False)
    with pytest.raises(ConfigError, match="--allow-remote"):
        check_host("0.0.0.0", allow_remote=False)
    check_host("0.0.0.0", allow_remote=True)
    result = CliRunner().invoke(cli, ["console", "--host", "0.0.0.0", "--root", str(root)])
    assert isinstance(result.exception, ConfigError)


def test_a_damaged_log_is_reported_not_guessed(store: Store, console: Served) -> None:
    w = _session(store)
    path = w.log.path / "log.jsonl"
    w.log.close()
    data = bytearray(path.read_bytes())
    start = data.index(b'"kind":"tool.result"')
    data[start : start + 6] = b"@@@@@@"  # a line in the middle is no longer JSON
    path.write_bytes(bytes(data))
    with httpx.Client(base_url=console.url) as c:
        r = c.get(f"/api/s/{w.id}/poll")
        assert r.status_code == 500
        assert "seq" in r.json()["error"]
        assert c.get("/api/sessions").status_code == 200  # the list still answers


def test_a_session_too_large_to_aggregate_in_the_list_still_has_its_title(
    store: Store, console: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nodwyn.console.app as app

    monkeypatch.setattr(app, "LIST_BYTES", 0)  # every session is too large to aggregate for the list
    w = Writer(store.create())
    w.turn(1000, 0)
    w.user("  \n")  # a blank first message is the title, not a reason to look further
    w.user("second")
    with httpx.Client(base_url=console.url) as c:
        (listed,) = c.get("/api/sessions").json()["sessions"]
    assert listed["title"] == "" and listed["aggregated"] is False and listed["rate"] is None
