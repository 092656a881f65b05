"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``).

One ``{timestamp, type, payload}`` object a line. ``session_meta`` opens the file
(``base_instructions.text``, when recorded, is the system prompt); ``turn_context`` names the
model of the turn; ``response_item`` lines are the Responses API items the conversation holds:
``message`` (``user``/``developer`` input, ``assistant`` output; text parts ``input_text``,
``output_text``), ``reasoning`` (its ``summary`` texts are the reply's thinking; the encrypted
content is not kept), ``function_call``/``custom_tool_call``/``local_shell_call`` (calls, by
``call_id``) and their ``*_output`` items (results; an ``output`` is text, a list of content
items or an older ``{content, success}`` object). Consecutive output items form one reply;
an ``event_msg`` of type ``token_count`` ends the model call it reports, and its
``info.last_token_usage`` is that call's usage: ``input_tokens`` the whole prompt (cached
included), ``cached_input_tokens`` the part read from the cache, ``output_tokens``,
``reasoning_output_tokens``. A repeated token_count (Codex writes some twice) adds nothing. A
``compacted`` line (payload ``message``: the summary) replaces what the model sees: each later
request is the summary and what followed (``Sent.view``, why ``compaction``). Other
``event_msg`` lines repeat the items for the TUI and are skipped. See docs/imports.md for the
fields whose meaning is not certain.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from nodwyn.errors import ImportFormatError
from nodwyn.imports.jsonfile import field, read_jsonl
from nodwyn.imports.run import Reader, Run, Stand, count, user
from nodwyn.values.content import AssistantMessage, ToolCall
from nodwyn.values.request import Usage

FORMAT = "codex"
CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})


def is_rollout(first: Any) -> bool:
    return (
        isinstance(first, dict)
        and first.get("type") == "session_meta"
        and isinstance(first.get("payload"), dict)
    )


def _texts(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ImportFormatError(f"{where}: expected a list of content parts, found {type(content).__name__}")
    out = []
    for i, p in enumerate(content):
        if not isinstance(p, dict):
            raise ImportFormatError(f"{where}[{i}]: expected a content part")
        if p.get("type") in ("input_text", "output_text", "text"):
            out.append(field(p, "text", str, f"{where}[{i}]"))
        else:
            out.append(f"[{p.get('type')}]")  # an image: not imported, its place kept
    return "\n".join(out)


def _usage(info: Any, where: str) -> Usage | None:
    if not isinstance(info, dict):
        return None
    last = info.get("last_token_usage")
    if not isinstance(last, dict):
        return None
    w = f"{where}.info.last_token_usage"
    return Usage(
        prompt_tokens=count(last, "input_tokens", w),
        cached_tokens=count(last, "cached_input_tokens", w),
        output_tokens=count(last, "output_tokens", w),
        reasoning_tokens=count(last, "reasoning_output_tokens", w),
    )


def _output(p: dict[str, Any], where: str) -> tuple[str, bool]:
    out = p.get("output")
    if isinstance(out, str):
        return out, False
    if isinstance(out, list):  # content items (input_text, input_image), as newer Codex writes
        return _texts(out, f"{where}.output"), False
    if isinstance(out, dict):
        text = out.get("content")
        ok = out.get("success")
        return (text if isinstance(text, str) else json.dumps(out)), ok is False
    found = type(out).__name__
    raise ImportFormatError(f"{where}.output: expected text, content items or an object, found {found}")


def _call(t: str, p: dict[str, Any], pw: str) -> ToolCall:
    """A function_call, custom_tool_call or local_shell_call item as a call."""
    if t == "local_shell_call":
        cid = str(p.get("call_id") or p.get("id"))
        return ToolCall(id=cid, name="local_shell", arguments=json.dumps(p.get("action")))
    cid = field(p, "call_id", str, pw)
    if t == "function_call":
        return ToolCall(id=cid, name=field(p, "name", str, pw), arguments=field(p, "arguments", str, pw))
    return ToolCall(
        id=cid, name=field(p, "name", str, pw), arguments=json.dumps({"input": field(p, "input", str, pw)})
    )


class _Reader(Reader):
    """The conversation read so far (one Sent per model call) and the reply being gathered."""

    def __init__(self) -> None:
        super().__init__()
        self.open_reply = False  # the latest message is a reply still gathering items
        self.counted = True  # the latest reply has its token_count
        self.last_info: Any = None

    def line(self, d: Any, w: str) -> None:
        kind = field(d, "type", str, w)
        handler = _LINES.get(kind)
        if handler is not None:  # other lines repeat the items for the TUI
            handler(self, d, w)

    def session_meta(self, d: Any, w: str) -> None:
        base = field(d, "payload", dict, w).get("base_instructions")
        if isinstance(base, dict) and isinstance(base.get("text"), str):
            self.system = base["text"]

    def turn_context(self, d: Any, w: str) -> None:
        p = d.get("payload")
        if isinstance(p, dict) and isinstance(p.get("model"), str):
            self.model = p["model"]

    def compacted(self, d: Any, w: str) -> None:
        text = field(field(d, "payload", dict, w), "message", str, f"{w}: payload")
        self.summary = Stand(message=user(text), why="compaction", of=tuple(range(len(self.out))))
        self.since = len(self.out)
        self.why.append("compaction")
        self.open_reply = False

    def event_msg(self, d: Any, w: str) -> None:
        """A token_count ends the model call it reports (a repeated one adds nothing)."""
        p = d.get("payload")
        if not (isinstance(p, dict) and p.get("type") == "token_count"):
            return
        info = p.get("info")
        if info is not None and info != self.last_info and self.sents and not self.counted:
            self.sents[-1] = replace(self.sents[-1], usage=_usage(info, w))
            self.counted = True
            self.open_reply = False  # the model call it reports is over
        self.last_info = info if info is not None else self.last_info

    def response_item(self, d: Any, w: str) -> None:
        p = field(d, "payload", dict, w)
        pw = f"{w}: payload"
        t = field(p, "type", str, pw)
        if t == "message":
            self.message(p, pw)
        elif t == "reasoning":
            self.reasoning(p, pw)
        elif t in CALLS:
            call = _call(t, p, pw)
            self.names[call.id] = call.name
            self.reply_item(call=call)
        elif t in OUTPUTS:
            self.result(field(p, "call_id", str, pw), *_output(p, pw))
            self.open_reply = False
        # web_search_call and other server-side items: no message of the conversation

    def message(self, p: dict[str, Any], pw: str) -> None:
        role = field(p, "role", str, pw)
        text = _texts(p.get("content"), f"{pw}.content")
        if role == "assistant":
            self.reply_item(text=text)
            self.counted = False
        else:  # user, developer, system: input the model is sent
            self.out.append(user(text))
            self.open_reply = False

    def reasoning(self, p: dict[str, Any], pw: str) -> None:
        parts = p.get("summary") or []
        thinking = "\n".join(
            field(s, "text", str, f"{pw}.summary[{i}]") for i, s in enumerate(parts) if isinstance(s, dict)
        )
        self.reply_item(thinking=thinking)

    def reply_item(self, *, text: str = "", thinking: str = "", call: ToolCall | None = None) -> None:
        """Add an output item to the reply being gathered, or begin a new reply (a new request,
        not yet counted)."""
        last = self.out[-1] if self.out else None
        if self.open_reply and isinstance(last, AssistantMessage):
            self.out[-1] = AssistantMessage(
                text="\n".join(x for x in (last.text, text) if x),
                thinking="\n".join(x for x in (last.thinking, thinking) if x),
                calls=(*last.calls, *((call,) if call else ())),
            )
        else:
            message = AssistantMessage(text=text, thinking=thinking, calls=(call,) if call else ())
            self.reply(message, None, self.model)
            self.counted = False
        self.open_reply = True


_LINES: dict[str, Callable[[_Reader, Any, str], None]] = {
    "session_meta": _Reader.session_meta,
    "turn_context": _Reader.turn_context,
    "compacted": _Reader.compacted,
    "event_msg": _Reader.event_msg,
    "response_item": _Reader.response_item,
}


def load(path: Path, name: str) -> Run:
    reader = _Reader()
    for n, d in read_jsonl(path):
        reader.line(d, f"{path}:{n}")
    run = reader.run(name, FORMAT, str(path))
    if not run.messages:
        raise ImportFormatError(f"{path}: no model reply; is it a Codex rollout?")
    return run
