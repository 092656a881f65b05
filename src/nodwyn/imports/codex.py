"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``).

One ``{timestamp, type, payload}`` object a line. ``session_meta`` opens the file
(``base_instructions.text``, when recorded, is the system prompt); ``turn_context`` names the
model of the turn; ``response_item`` lines are the Responses API items the conversation holds:
``message`` (``user``/``developer`` input, ``assistant`` output; text parts ``input_text``,
``output_text``), ``reasoning`` (its ``summary`` texts are the reply's thinking; the encrypted
content is not kept), ``function_call``/``custom_tool_call``/``local_shell_call`` (calls, by
``call_id``) and their ``*_output`` items (results). Consecutive output items form one reply;
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
from pathlib import Path
from typing import Any

from nodwyn.errors import ImportFormatError
from nodwyn.imports.jsonfile import field, read_jsonl
from nodwyn.imports.run import Run, Sent, Stand, check_pairs, until_last_reply, user
from nodwyn.values.content import AssistantMessage, Message, ToolCall, ToolMessage
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

    def count(key: str) -> int | None:
        v = last.get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            raise ImportFormatError(f"{where}.info.last_token_usage.{key}: expected a count, found {v!r}")
        return v

    return Usage(
        prompt_tokens=count("input_tokens"),
        cached_tokens=count("cached_input_tokens"),
        output_tokens=count("output_tokens"),
        reasoning_tokens=count("reasoning_output_tokens"),
    )


def _output(p: dict[str, Any], where: str) -> tuple[str, bool]:
    out = p.get("output")
    if isinstance(out, str):
        return out, False
    if isinstance(out, dict):
        text = out.get("content")
        ok = out.get("success")
        return (text if isinstance(text, str) else json.dumps(out)), ok is False
    raise ImportFormatError(f"{where}.output: expected text or an object, found {type(out).__name__}")


def load(path: Path, name: str) -> Run:
    lines = read_jsonl(path)
    system = ""
    model = ""
    out: list[Message] = []
    sents: list[Sent] = []
    open_reply = False  # the latest message is a reply still gathering items
    counted = True  # the latest reply has its token_count
    last_info: Any = None
    since: int | None = None
    summary: Stand | None = None
    why: list[str] = []
    names: dict[str, str] = {}
    for n, d in lines:
        w = f"{path}:{n}"
        kind = field(d, "type", str, w)
        p = d.get("payload")
        if kind == "session_meta":
            p = field(d, "payload", dict, w)
            base = p.get("base_instructions")
            if isinstance(base, dict) and isinstance(base.get("text"), str):
                system = base["text"]
            continue
        if kind == "turn_context":
            if isinstance(p, dict) and isinstance(p.get("model"), str):
                model = p["model"]
            continue
        if kind == "compacted":
            p = field(d, "payload", dict, w)
            text = field(p, "message", str, f"{w}: payload")
            summary = Stand(message=user(text), why="compaction", of=tuple(range(len(out))))
            since = len(out)
            why.append("compaction")
            open_reply = False
            continue
        if kind == "event_msg":
            if isinstance(p, dict) and p.get("type") == "token_count":
                info = p.get("info")
                if info is not None and info != last_info and sents and not counted:
                    s = sents[-1]
                    sents[-1] = Sent(usage=_usage(info, w), model=s.model, view=s.view, why=s.why)
                    counted = True
                    open_reply = False  # the model call it reports is over
                last_info = info if info is not None else last_info
            continue
        if kind != "response_item":
            continue
        p = field(d, "payload", dict, w)
        t = field(p, "type", str, f"{w}: payload")
        pw = f"{w}: payload"
        if t == "message":
            role = field(p, "role", str, pw)
            text = _texts(p.get("content"), f"{pw}.content")
            if role == "assistant":
                _reply(out, sents, since, summary, why, model, open_reply, text=text)
                open_reply, counted = True, False
            else:  # user, developer, system: input the model is sent
                out.append(user(text))
                open_reply = False
        elif t == "reasoning":
            parts = p.get("summary") or []
            thinking = "\n".join(
                field(s, "text", str, f"{pw}.summary[{i}]")
                for i, s in enumerate(parts)
                if isinstance(s, dict)
            )
            _reply(out, sents, since, summary, why, model, open_reply, thinking=thinking)
            open_reply, counted = True, counted and open_reply
        elif t in CALLS:
            cid = (
                field(p, "call_id", str, pw)
                if t != "local_shell_call"
                else str(p.get("call_id") or p.get("id"))
            )
            if t == "function_call":
                call = ToolCall(
                    id=cid, name=field(p, "name", str, pw), arguments=field(p, "arguments", str, pw)
                )
            elif t == "custom_tool_call":
                call = ToolCall(
                    id=cid,
                    name=field(p, "name", str, pw),
                    arguments=json.dumps({"input": field(p, "input", str, pw)}),
                )
            else:
                call = ToolCall(id=cid, name="local_shell", arguments=json.dumps(p.get("action")))
            names[cid] = call.name
            _reply(out, sents, since, summary, why, model, open_reply, call=call)
            open_reply, counted = True, counted and open_reply
        elif t in OUTPUTS:
            cid = field(p, "call_id", str, pw)
            text, failed = _output(p, pw)
            out.append(ToolMessage(call_id=cid, name=names.get(cid, ""), text=text, error=failed))
            open_reply = False
        else:  # web_search_call and other server-side items: no message of the conversation
            continue
    messages = until_last_reply(out)
    if not any(isinstance(m, AssistantMessage) for m in messages):
        raise ImportFormatError(f"{path}: no model reply; is it a Codex rollout?")
    check_pairs(messages, str(path))
    return Run(
        name=name,
        format=FORMAT,
        system=system,
        tools=(),
        messages=tuple(messages),
        model=model,
        requests=tuple(sents),
    )


def _reply(
    out: list[Message],
    sents: list[Sent],
    since: int | None,
    summary: Stand | None,
    why: list[str],
    model: str,
    open_reply: bool,
    *,
    text: str = "",
    thinking: str = "",
    call: ToolCall | None = None,
) -> None:
    """Add an output item to the reply being gathered, or begin a new reply (a new request)."""
    last = out[-1] if out else None
    if open_reply and isinstance(last, AssistantMessage):
        out[-1] = AssistantMessage(
            text="\n".join(x for x in (last.text, text) if x),
            thinking="\n".join(x for x in (last.thinking, thinking) if x),
            calls=(*last.calls, *((call,) if call else ())),
        )
        return
    view = (summary, *range(since, len(out))) if since is not None and summary is not None else None
    sents.append(Sent(model=model, view=view, why=tuple(why)))
    why.clear()
    out.append(AssistantMessage(text=text, thinking=thinking, calls=(call,) if call else ()))
