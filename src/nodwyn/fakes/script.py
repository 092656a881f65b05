"""Reply scripts: what a fake server answers, one item per request, in order.

A script item is one JSON object (one a line in a ``.jsonl`` file) whose keys do what ``ITEM_KEYS``
says (``nodwyn fake serve --help`` shows it), e.g. ``{"text": "...", "calls": [{"name": "fs-read",
"arguments": {"path": "a.py"}}]}``. A call's ``arguments`` may be a string (APIs whose arguments are
JSON text): sent as written, so a script can send arguments that do not parse. A ``stall`` lasts
until the client goes away or the server closes; a ``flood`` is made as it is sent, never held whole.

An ``error`` item answers that HTTP error in the API's own shape instead of a reply. ``quirks``
(each recorded from a real server): ``done_marker`` (Responses: ``data: [DONE]`` after the
terminal event, as OpenRouter's /responses sends), ``empty_signature`` (OpenRouter: the first
reasoning.text fragment carries ``"signature": ""``, the real one comes later), ``list_content``
(chat: ``content`` as a list of ``text`` and ``thinking`` chunks, as Mistral sends),
``no_call_ids`` (chat and Ollama: tool calls without ids, as Gemini's and Ollama's
OpenAI-compatible servers send), ``delta_transformations`` (Anthropic: ``input_transformations``
on ``message_delta`` instead of ``message_start``). ``whole_reply`` (any API) answers one JSON
object although a stream was asked: a server or proxy that ignores ``stream: true``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from nodwyn.errors import ConfigError

QUIRKS = frozenset(
    {"done_marker", "empty_signature", "list_content", "no_call_ids", "delta_transformations", "whole_reply"}
)
STALLS = ("accept", "headers", "keepalive", "drip", "pace")
# What each key of a script item does, for `nodwyn fake serve --help`.
ITEM_KEYS: dict[str, str] = {
    "text": "the reply's text",
    "thinking": "its reasoning text",
    "calls": 'tool calls: [{"name": ..., "arguments": {...}, "id": optional}]',
    "reasoning_details": "OpenRouter reasoning_details, sent back as streamed",
    "blocks": 'reasoning blocks: [{"type": "thinking"|"redacted_thinking", "thinking": ..., "position": N}]',
    "error": 'answer an HTTP error instead: {"status": 429, "message": ..., "retry_after": 2, "type": ..., '
    '"param": ..., "mid_stream": false}',
    "cut": "true: end the stream before its terminal event",
    "empty_output": "true (Responses): a terminal event whose output is []",
    "phase": 'Responses: the message item\'s phase, e.g. "commentary"',
    "quirks": "what real servers send: " + ", ".join(sorted(QUIRKS)),
    "stall": 'a provider fault in time: {"when": one of ' + ", ".join(STALLS) + ', "interval": seconds} '
    "(accept: answer nothing; headers: the 200 headers, then nothing; keepalive: SSE comments every "
    "interval; drip: openai-chat, the reply then one more delta every interval, never its end; "
    "pace: the reply whole, interval seconds between its chunks)",
    "flood": 'openai-chat: a reply whose text is this large: {"bytes": N, "line": true|false} '
    "(64 KB deltas, or one data: line)",
    "finish": 'openai-chat: the finish reason sent instead of "stop"/"tool_calls", e.g. "length"',
}
_KEYS = frozenset(ITEM_KEYS)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptCall:
    name: str
    arguments: dict[str, Any] = field(hash=False)
    id: str | None = None
    text: str | None = None  # arguments given as text, sent as written (they may not parse)

    @property
    def arguments_json(self) -> str:
        """The arguments as the JSON text APIs with string arguments stream."""
        return self.text if self.text is not None else orjson.dumps(self.arguments).decode()


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptError:
    status: int
    message: str
    type: str | None = None
    param: str | None = None
    code: str | None = None
    retry_after: float | None = None
    mid_stream: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Stall:
    when: str  # one of STALLS
    interval: float = 0.05


@dataclass(frozen=True, slots=True, kw_only=True)
class Flood:
    bytes: int
    line: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptItem:
    text: str = ""
    thinking: str = ""
    calls: tuple[ScriptCall, ...] = ()
    reasoning_details: tuple[Any, ...] | None = None
    blocks: tuple[Mapping[str, Any], ...] = ()
    error: ScriptError | None = None
    cut: bool = False
    empty_output: bool = False
    phase: str | None = None
    quirks: frozenset[str] = frozenset()
    stall: Stall | None = None
    flood: Flood | None = None
    finish: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, hash=False)


def parse_item(raw: Any, where: str = "script item") -> ScriptItem:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: a script item must be a JSON object")
    unknown = set(raw) - _KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown keys {sorted(unknown)}; use {sorted(_KEYS)}")
    calls = _calls(raw.get("calls") or [], where)
    error = _error(raw.get("error"), where)
    details = raw.get("reasoning_details")
    if details is not None and not isinstance(details, list):
        raise ConfigError(f"{where}: reasoning_details must be a list")
    blocks = raw.get("blocks") or []
    if not isinstance(blocks, list) or not all(isinstance(b, dict) and "type" in b for b in blocks):
        raise ConfigError(f'{where}: blocks must be a list of objects with a "type"')
    quirks = raw.get("quirks") or []
    if not isinstance(quirks, list) or not set(quirks) <= QUIRKS:
        raise ConfigError(f"{where}: quirks must be a list of {sorted(QUIRKS)}")
    phase = raw.get("phase")
    if phase is not None and not isinstance(phase, str):
        raise ConfigError(f"{where}: phase must be a string")
    return ScriptItem(
        stall=_stall(raw.get("stall"), where),
        flood=_flood(raw.get("flood"), where),
        text=str(raw.get("text") or ""),
        thinking=str(raw.get("thinking") or ""),
        calls=calls,
        reasoning_details=None if details is None else tuple(details),
        blocks=tuple(blocks),
        error=error,
        cut=bool(raw.get("cut")),
        empty_output=bool(raw.get("empty_output")),
        phase=phase,
        quirks=frozenset(quirks),
        finish=None if raw.get("finish") is None else str(raw["finish"]),
        raw=raw,
    )


def _calls(raw: Any, where: str) -> tuple[ScriptCall, ...]:
    calls = []
    for i, c in enumerate(raw):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise ConfigError(f'{where}: calls[{i}] needs a "name"')
        args = c.get("arguments", {})
        if isinstance(args, str):
            calls.append(ScriptCall(name=c["name"], arguments={}, id=c.get("id"), text=args))
            continue
        if not isinstance(args, dict):
            raise ConfigError(f"{where}: calls[{i}].arguments must be a JSON object or a string")
        calls.append(ScriptCall(name=c["name"], arguments=args, id=c.get("id")))
    return tuple(calls)


def _error(e: Any, where: str) -> ScriptError | None:
    if e is None:
        return None
    if not isinstance(e, dict) or not isinstance(e.get("status"), int):
        raise ConfigError(f'{where}: error needs an integer "status"')
    return ScriptError(
        status=e["status"],
        message=str(e.get("message") or f"scripted error {e['status']}"),
        type=e.get("type"),
        param=e.get("param"),
        code=e.get("code"),
        retry_after=e.get("retry_after"),
        mid_stream=bool(e.get("mid_stream")),
    )


def _stall(raw: Any, where: str) -> Stall | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.get("when") not in STALLS or set(raw) - {"when", "interval"}:
        raise ConfigError(
            f'{where}: stall must be {{"when": one of {", ".join(STALLS)}, "interval": seconds}}'
        )
    interval = raw.get("interval", 0.05)
    if not isinstance(interval, int | float) or isinstance(interval, bool) or not 0 < interval <= 60:
        raise ConfigError(f"{where}: stall interval must be a number of seconds in (0, 60]")
    return Stall(when=raw["when"], interval=float(interval))


def _flood(raw: Any, where: str) -> Flood | None:
    if raw is None:
        return None
    size = raw.get("bytes") if isinstance(raw, dict) else None
    if (
        not isinstance(raw, dict)
        or set(raw) - {"bytes", "line"}
        or not isinstance(size, int)
        or isinstance(size, bool)
        or size < 1
    ):
        raise ConfigError(f'{where}: flood must be {{"bytes": a positive integer, "line": true|false}}')
    return Flood(bytes=size, line=bool(raw.get("line")))


def load_script(path: Path) -> list[ScriptItem]:
    """Read a JSONL script; a bad line is named by its number."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read script {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"script {path} is not UTF-8 text (byte {exc.start}); give a JSONL file, one JSON object per line"
        ) from None
    items = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except ValueError as exc:
            raise ConfigError(f"{path}:{n}: not JSON ({exc}); one JSON object per line") from None
        items.append(parse_item(raw, f"{path}:{n}"))
    return items


class Script:
    """The replies still to give, consumed in order by concurrent requests."""

    def __init__(self, items: Iterable[ScriptItem | Mapping[str, Any]]) -> None:
        self._items = [i if isinstance(i, ScriptItem) else parse_item(i) for i in items]
        self._used = 0
        self._lock = threading.Lock()

    def next(self) -> ScriptItem | None:
        with self._lock:
            if self._used >= len(self._items):
                return None
            item = self._items[self._used]
            self._used += 1
            return item

    @property
    def total(self) -> int:
        return len(self._items)

    @property
    def remaining(self) -> list[ScriptItem]:
        with self._lock:
            return self._items[self._used :]
