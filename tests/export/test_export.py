"""``nodwyn export`` as a person runs it: a session recorded by ``nodwyn run`` against an
Anthropic-like fake (cache reads and writes), exported as Markdown, one JSON document and
OpenTelemetry spans; the spans are sent to a receiver on 127.0.0.1 and decoded there with the
official ``opentelemetry-proto`` messages."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict, Parse
from markdown_it import MarkdownIt
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from nodwyn.errors import ExportError
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.testing import isolated_env
from nodwyn.values.events import Event

NODWYN = [str(Path(sys.executable).parent / "nodwyn")]
TRICKY = "Use it like this:\n```python\nadd(1, 2)\n```\nand `add` returns 3."


def call(name: str, cid: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "id": cid, "arguments": arguments}


def nodwyn(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*NODWYN, *args],
        env=env,
        capture_output=True,
        timeout=timeout,
        cwd=env["WS"],
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], str, list[Event]]:
    """One session: a tool call that works, one that fails, and an answer full of backticks."""
    tmp = tmp_path_factory.mktemp("export")
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text("def add(a, b):\n    return a + b\n" + "# padding line\n" * 400)
    env = isolated_env(tmp, PATH=os.environ.get("PATH", ""), WS=str(ws))
    script: list[dict[str, Any]] = [
        {"text": "Reading.", "calls": [call("fs-read", "toolu_1", path="calc.py")]},
        {"thinking": "missing file next", "calls": [call("fs-read", "toolu_2", path="nope.py")]},
        {"text": TRICKY},
    ]
    with FakeServer(api="anthropic", script=script, cache="breakpoints") as fake:
        Path(env["NODWYN_CONFIG"]).write_text(
            f"""[control]
model = "claude"

[models.claude]
api = "anthropic"
model = "fake-model"
base_url = "{fake.url}"
context_size = 32000
cache_control = "ephemeral"
prices = {{ input = 3.0, output = 15.0, cached_input = 0.3, cache_write = 3.75 }}
"""
        )
        done = nodwyn(env, "run", "Explain add() in calc.py.", "--yes")
        assert done.returncode == 0, done.stderr.decode()
    store = Store(tmp / "home")
    (sid,) = store.ids()
    with store.open(sid) as log:
        events = list(log.read())
    return env, sid, events


class Receiver:
    """An OTLP/HTTP collector stand-in on 127.0.0.1: keeps what it got, answers ``status``."""

    def __init__(self, status: int = 200) -> None:
        self.got: list[tuple[str, dict[str, str], bytes]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                outer.got.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(status)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def parse_otlp_json(text: str) -> ExportTraceServiceRequest:
    """OTLP/JSON decoded as a collector does: the protobuf JSON mapping, except that trace and span
    ids are hex (the spec's one deviation; protobuf's own mapping would read them as base64)."""
    doc = json.loads(text)
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        assert len(span[key]) in (16, 32) and int(span[key], 16) >= 0  # hex, not base64
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    parsed: ExportTraceServiceRequest = Parse(json.dumps(doc), ExportTraceServiceRequest())
    return parsed


def _attrs(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        which = kv.value.WhichOneof("value")
        if which == "array_value":
            out[kv.key] = [v.string_value for v in kv.value.array_value.values]
        else:
            out[kv.key] = getattr(kv.value, which)
    return out


def _check_spans(req: ExportTraceServiceRequest, sid: str, events: list[Event]) -> None:
    (rs,) = req.resource_spans
    resource = {kv.key: kv.value.string_value for kv in rs.resource.attributes}
    assert resource["service.name"] == "nodwyn" and resource["nodwyn.session"] == sid
    spans = list(rs.scope_spans[0].spans)
    root = spans[0]
    assert root.parent_span_id == b"" and _attrs(root)["gen_ai.operation.name"] == "invoke_agent"
    assert all(s.trace_id == root.trace_id and len(s.trace_id) == 16 for s in spans)
    chats = [s for s in spans if _attrs(s).get("gen_ai.operation.name") == "chat"]
    tools = [s for s in spans if _attrs(s).get("gen_ai.operation.name") == "execute_tool"]
    reqs = [e for e in events if e.kind == "llm.req"]
    replies = {e.data["req"]: e for e in events if e.kind == "llm.resp"}
    assert len(chats) == len(reqs) == 3
    for span, sent in zip(chats, reqs, strict=True):
        a = _attrs(span)
        usage = replies[sent.seq].data["response"]["usage"]
        assert span.name == "chat fake-model" and span.kind == 3  # SPAN_KIND_CLIENT
        assert span.parent_span_id == root.span_id
        assert a["gen_ai.request.model"] == "fake-model"
        assert a["gen_ai.conversation.id"] == sid and a["nodwyn.seq"] == sent.seq
        assert a["gen_ai.usage.input_tokens"] == usage["prompt_tokens"]
        assert a["gen_ai.usage.output_tokens"] == usage["output_tokens"]
        assert a["gen_ai.usage.cache_read.input_tokens"] == usage["cached_tokens"]
        assert a["gen_ai.usage.cache_creation.input_tokens"] == usage["cache_write_tokens"]
        assert a["gen_ai.response.finish_reasons"] == [replies[sent.seq].data["response"]["finish"]]
        assert a["nodwyn.request.digest"] == sent.data["digest"]
        assert span.end_time_unix_nano >= span.start_time_unix_nano > 1_700_000_000 * 10**9
    # the fake's cache served later requests from what earlier ones wrote: reads and writes are real
    assert sum(_attrs(s)["gen_ai.usage.cache_read.input_tokens"] for s in chats) > 0
    assert sum(_attrs(s)["gen_ai.usage.cache_creation.input_tokens"] for s in chats) > 0
    assert _attrs(chats[0])["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert _attrs(chats[-1])["gen_ai.response.finish_reasons"] == ["stop"]
    assert [(_attrs(s)["gen_ai.tool.call.id"], s.name) for s in tools] == [
        ("toolu_1", "execute_tool fs-read"),
        ("toolu_2", "execute_tool fs-read"),
    ]
    assert tools[0].status.code == 0 and tools[1].status.code == 2  # STATUS_CODE_ERROR: no such file
    assert _attrs(tools[1])["error.type"] == "tool_error"
    assert len({s.span_id for s in spans}) == len(spans)


def test_markdown_is_a_transcript_a_person_pastes(recorded: tuple[dict[str, str], str, list[Event]]) -> None:
    env, sid, events = recorded
    done = nodwyn(env, "export", sid[:17], "--format", "md")
    assert done.returncode == 0, done.stderr.decode()
    md = done.stdout.decode()
    assert md.startswith(f"# nodwyn session {sid}\n")
    assert "> Explain add() in calc.py." in md
    assert "3 requests" in md and "token cache rate" in md and "cost $" in md
    assert "<details><summary>Tool call: <code>fs-read</code></summary>" in md
    assert "<details><summary>Tool call: <code>fs-read</code> (failed)</summary>" in md
    assert "llm.req" not in md and "sha256:" not in md  # no internals
    tokens = MarkdownIt("commonmark").parse(md)
    blocks = [t.content for t in tokens if t.type == "fence"]
    assert any("def add(a, b):" in b for b in blocks)  # the tool result, whole in one block
    # the answer's own fence stays the answer's: it is Markdown, not swallowed or cut
    fenced = [t for t in tokens if t.type == "fence" and t.info == "python"]
    assert [t.content for t in fenced] == ["add(1, 2)\n"]
    assert TRICKY.splitlines()[-1] in md
    thinking = [b for b in blocks if "missing file next" in b]
    assert thinking, "the thinking is kept, folded"


def test_json_is_the_whole_session_in_one_document(recorded: tuple[dict[str, str], str, list[Event]]) -> None:
    env, sid, events = recorded
    done = nodwyn(env, "export", "latest", "--format", "json")
    assert done.returncode == 0, done.stderr.decode()
    doc = json.loads(done.stdout)
    assert doc["format"] == "nodwyn.session" and doc["session"] == sid
    assert [e["seq"] for e in doc["events"]] == [e.seq for e in events]
    assert [e["data"] for e in doc["events"]] == [e.data for e in events]
    assert doc["totals"]["all"]["requests"] == 3 and len(doc["requests"]) == 3
    assert doc["totals"]["all"]["cost_usd"] > 0 and doc["totals"]["all"]["cost_unknown"] == 0
    assert doc["started"] == events[0].t and doc["ended"] == events[-1].t


def test_otlp_json_file_decodes_with_the_official_messages(
    recorded: tuple[dict[str, str], str, list[Event]], tmp_path: Path
) -> None:
    env, sid, events = recorded
    out = tmp_path / "spans.json"
    done = nodwyn(env, "export", sid, "--format", "otel", "-o", str(out))
    assert done.returncode == 0, done.stderr.decode()
    request = parse_otlp_json(out.read_text())
    _check_spans(request, sid, events)


@pytest.mark.parametrize("protocol", ["protobuf", "json"])
def test_spans_sent_to_an_otlp_http_receiver(
    recorded: tuple[dict[str, str], str, list[Event]], receiver: Receiver, protocol: str
) -> None:
    env, sid, events = recorded
    done = nodwyn(
        env,
        "export",
        sid,
        "--format",
        "otel",
        "--otlp-endpoint",
        receiver.url,
        "--otlp-protocol",
        protocol,
        "--otlp-header",
        "x-team=agents",
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b""
    ((path, headers, body),) = receiver.got
    assert path == "/v1/traces" and headers["x-team"] == "agents"
    request = ExportTraceServiceRequest()
    if protocol == "protobuf":
        assert headers["content-type"] == "application/x-protobuf"
        request.ParseFromString(body)
    else:
        assert headers["content-type"] == "application/json"
        request = parse_otlp_json(body.decode())
    _check_spans(request, sid, events)
    # the same spans whichever way they travel, and the same again on a second export
    again = nodwyn(env, "export", sid, "--format", "otel")
    assert MessageToDict(parse_otlp_json(again.stdout.decode())) == MessageToDict(request)


def test_a_refusing_collector_is_one_line(recorded: tuple[dict[str, str], str, list[Event]]) -> None:
    env, sid, _ = recorded
    refusing = Receiver(status=400)
    try:
        done = nodwyn(
            env, "export", sid, "--format", "otel", "--otlp-endpoint", refusing.url + "/custom/path"
        )
    finally:
        refusing.close()
    err = done.stderr.decode()
    assert done.returncode == ExportError.exit_code == 16 and err.count("\n") == 1
    assert "HTTP 400" in err and "/custom/path" in err
    with socket.socket() as s:  # a port nothing listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        unreachable = nodwyn(
            env, "export", sid, "--format", "otel", "--otlp-endpoint", f"http://127.0.0.1:{port}"
        )
    err = unreachable.stderr.decode()
    assert unreachable.returncode == 16 and err.count("\n") == 1 and "check that a collector listens" in err
    bad = nodwyn(env, "export", sid, "--format", "otel", "--otlp-endpoint", "ftp://x")
    assert bad.returncode == 2 and "not an http(s) URL" in bad.stderr.decode()


FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixture_logs"


def test_a_sub_agent_is_a_span_of_its_own_and_a_task_in_markdown(tmp_path: Path) -> None:
    home = FIXTURES / "sub-agent"  # a session the release at 12cbafd wrote; read, never changed
    before = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "NODWYN_HOME": str(home)}
    env |= {"NODWYN_CONFIG": str(tmp_path / "none.toml"), "WS": str(tmp_path)}
    otel = nodwyn(env, "export", "latest", "--format", "otel")
    assert otel.returncode == 0, otel.stderr.decode()
    spans = list(parse_otlp_json(otel.stdout.decode()).resource_spans[0].scope_spans[0].spans)
    root = spans[0]
    (sub,) = [s for s in spans if s.name == "invoke_agent sub-agent"]
    assert sub.parent_span_id == root.span_id and _attrs(sub)["gen_ai.agent.id"] == "sub-1"
    inner = [s for s in spans if _attrs(s).get("nodwyn.context") == "sub-1"]
    assert inner and all(s.parent_span_id == sub.span_id for s in inner)
    assert {s.name for s in inner} == {"chat fake-model", "execute_tool fs-read"}
    assert sub.start_time_unix_nano <= min(s.start_time_unix_nano for s in inner)
    assert sub.end_time_unix_nano >= max(s.end_time_unix_nano for s in inner)
    # the parent's call that started the sub-agent is a tool span in main
    assert [s.parent_span_id for s in spans if s.name == "execute_tool sub-agent"] == [root.span_id]
    md = nodwyn(env, "export", "latest").stdout.decode()
    assert "*A sub-agent started (sub-1) with the tools fs-read.*" in md
    assert "## Task for the sub-agent · sub-1" in md and "## Person · sub-1" not in md
    assert {p: p.read_bytes() for p in home.rglob("*") if p.is_file()} == before
