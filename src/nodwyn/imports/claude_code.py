"""Claude Code project transcripts (``~/.claude/projects/<project>/<session>.jsonl``).

One JSON object a line, in the order Claude Code wrote them. ``type`` ``user`` and ``assistant``
lines carry ``message`` as the Messages API has it; other types (``summary`` titles,
``file-history-snapshot``, ``queue-operation``, ``progress``, ``system`` notices) never reach the
model and are skipped; so are ``attachment`` lines, though some (hook context, skill listings) are
text Claude Code adds to a later request (docs/imports.md). One API reply is written as several
``assistant`` lines (one per content block) sharing ``message.id``; they are joined into one reply,
whose usage is the last line's ``message.usage``: ``input_tokens`` (uncached),
``cache_read_input_tokens``, ``cache_creation_input_tokens``, ``output_tokens``; the whole prompt
is their first three summed. Since Claude Code 2.1 a reply's parallel ``tool_use`` blocks are
written one line each, each followed by the user line holding its ``tool_result``; those lines are
still one reply (its calls first, then their results, as the next request sent them). A user
line's ``tool_result`` blocks are results of the latest reply's ``tool_use`` calls; its text blocks
a user message. A compaction (a ``system`` line with ``subtype`` ``compact_boundary``, then a user
line with ``isCompactSummary``) replaces what the model sees by the summary: the conversation keeps
every message, and each request after it is the summary and what followed (``Sent.view``, why
``compaction``). Lines with ``isSidechain`` (a sub-agent's own conversation written into the
parent's file) are left out of the parent's run; a file of only such lines (a sub-agent's
transcript) is read as that sub-agent's run. The system prompt and tool catalog are not in the file
(docs/imports.md).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from nodwyn.errors import ImportFormatError
from nodwyn.imports.jsonfile import field, read_jsonl
from nodwyn.imports.run import Reader, Run, Stand, count, user
from nodwyn.values.content import AssistantMessage, TextPart, ToolCall, UserMessage
from nodwyn.values.request import Usage

FORMAT = "claude-code"
# User lines Claude Code writes around what the person ran itself (a slash command, a ! shell
# command) and their output: sent to the model, but not a prompt the person typed (not a title).
WRAPPERS = (
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
)


def is_transcript(first: Any) -> bool:
    """Whether a file's first object looks like a Claude Code transcript line."""
    return isinstance(first, dict) and (
        "sessionId" in first
        or "parentUuid" in first
        or first.get("type") in ("summary", "file-history-snapshot")
    )


def usage_of(u: Any, where: str) -> Usage | None:
    if u is None:
        return None
    if not isinstance(u, dict):
        raise ImportFormatError(f"{where}: expected an object, found {type(u).__name__}")
    keys = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens")
    fresh, read, write, output = (count(u, key, where) for key in keys)
    return Usage(
        prompt_tokens=None if fresh is None else fresh + (read or 0) + (write or 0),
        cached_tokens=read,
        cache_write_tokens=write,
        output_tokens=output,
    )


def _result_text(content: Any, where: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        parts = []
        for i, b in enumerate(content):
            if not isinstance(b, dict):
                raise ImportFormatError(f"{where}[{i}]: expected a content block")
            if b.get("type") == "text":
                parts.append(field(b, "text", str, f"{where}[{i}]"))
            else:
                parts.append(f"[{b.get('type')}]")  # an image the tool returned: not kept as text
        return "\n".join(parts)
    raise ImportFormatError(f"{where}: expected text or content blocks, found {type(content).__name__}")


def _only_results(content: Any) -> bool:
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _main_lines(lines: list[tuple[int, Any]]) -> tuple[list[tuple[int, Any]], int]:
    """The lines of the file's own run, and how many sidechain lines were left out (a file of only
    sidechain lines is a sub-agent's own transcript: all of it is the run)."""
    main = [(n, d) for n, d in lines if isinstance(d, dict) and not d.get("isSidechain")]
    if not any(d.get("type") in ("user", "assistant") for _, d in main):
        return lines, 0
    return main, len(lines) - len(main)


def _reply_parts(content: Any, w: str) -> tuple[list[str], list[str], list[ToolCall]]:
    """An assistant line's text, thinking and calls."""
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
    text: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCall] = []
    for i, b in enumerate(blocks):
        bw = f"{w}: message.content[{i}]"
        t = b.get("type") if isinstance(b, dict) else None
        if t == "text":
            text.append(field(b, "text", str, bw))
        elif t == "thinking":
            thinking.append(field(b, "thinking", str, bw))
        elif t == "tool_use":
            cid, name = field(b, "id", str, bw), field(b, "name", str, bw)
            calls.append(ToolCall(id=cid, name=name, arguments=json.dumps(b.get("input", {}))))
        elif t != "redacted_thinking":
            raise ImportFormatError(f"{bw}: unknown content block type {t!r}")
    return text, thinking, calls


class _Reader(Reader):
    """The conversation read so far and the reply still open; ``started``/``ended``: the first and
    last line's timestamps, ``title``: the first prompt the person typed."""

    def __init__(self) -> None:
        super().__init__()
        self.reply_id: str | None = None  # message.id of the reply being gathered
        self.reply_at = 0  # its index in out; after it only the results of its calls

    def line(self, d: Any, w: str) -> None:
        if not isinstance(d, dict):
            raise ImportFormatError(f"{w}: expected an object, found {type(d).__name__}")
        stamp = d.get("timestamp")
        if isinstance(stamp, str) and stamp:
            self.started = self.started or stamp
            self.ended = stamp
        kind = d.get("type")
        if kind == "system" and d.get("subtype") == "compact_boundary":
            self.compaction()
        elif kind == "assistant":
            self.assistant(field(d, "message", dict, w), w)
        elif kind == "user":
            self.user(d, field(d, "message", dict, w).get("content"), w)

    def compaction(self) -> None:
        self.since = len(self.out)
        self.why.append("compaction")
        self.reply_id = None

    def assistant(self, msg: dict[str, Any], w: str) -> None:
        """A line of a reply: joined to the open reply when it shares its message.id."""
        mid = msg.get("id")
        text, thinking, calls = _reply_parts(msg.get("content"), w)
        self.names.update((c.id, c.name) for c in calls)
        usage = usage_of(msg.get("usage"), f"{w}: message.usage")
        raw_model = msg.get("model")
        m_model = raw_model if isinstance(raw_model, str) else ""
        self.model = self.model or (m_model if m_model and not m_model.startswith("<") else "")
        last = self.out[self.reply_at] if mid is not None and mid == self.reply_id else None
        if isinstance(last, AssistantMessage):
            self.out[self.reply_at] = AssistantMessage(
                text="\n".join(x for x in (last.text, *text) if x),
                thinking="\n".join(x for x in (last.thinking, *thinking) if x),
                calls=(*last.calls, *calls),
            )
            self.sents[-1] = replace(self.sents[-1], usage=usage or self.sents[-1].usage)
        else:
            self.reply_at = len(self.out)
            reply = AssistantMessage(text="\n".join(text), thinking="\n".join(thinking), calls=tuple(calls))
            self.reply(reply, usage, m_model)
        self.reply_id = mid if isinstance(mid, str) else None

    def user(self, d: dict[str, Any], content: Any, w: str) -> None:
        if not _only_results(content):  # a line of only tool results keeps the reply open
            self.reply_id = None
        if d.get("isCompactSummary"):
            self.compact_summary(_result_text(content, f"{w}: message.content"))
            return
        if isinstance(content, str):
            self.out.append(user(content))
        elif isinstance(content, list):
            self.user_blocks(content, w)
        else:
            raise ImportFormatError(f"{w}: message.content: expected text or content blocks")
        said = self.out[-1] if self.out else None
        if not self.title and not d.get("isMeta") and isinstance(said, UserMessage):
            text = "".join(p.text for p in said.parts if isinstance(p, TextPart)).strip()
            if text and not text.startswith(WRAPPERS):
                self.title = text

    def compact_summary(self, said: str) -> None:
        self.summary = Stand(message=user(said), why="compaction", of=tuple(range(self.since or 0)))
        if self.since is None:  # a summary without its boundary line: it begins the view
            self.since = len(self.out)
            self.why.append("compaction")

    def user_blocks(self, content: list[Any], w: str) -> None:
        """Tool results, then the text blocks as one user message."""
        texts = []
        for i, b in enumerate(content):
            bw = f"{w}: message.content[{i}]"
            t = b.get("type") if isinstance(b, dict) else None
            if t == "tool_result":
                cid = field(b, "tool_use_id", str, bw)
                self.result(cid, _result_text(b.get("content"), f"{bw}.content"), bool(b.get("is_error")))
            elif t == "text":
                texts.append(field(b, "text", str, bw))
            elif t in ("image", "document"):
                texts.append(f"[{t}]")  # attachments are not imported; their place is kept
            else:
                raise ImportFormatError(f"{bw}: unknown content block type {t!r}")
        if texts:
            self.out.append(user("\n".join(texts)))


def load(path: Path, name: str) -> Run:
    main, side = _main_lines(read_jsonl(path))
    reader = _Reader()
    for n, d in main:
        reader.line(d, f"{path}:{n}")
    notes = (f"{side} sidechain (sub-agent) lines left out",) if side else ()
    run = reader.run(name, FORMAT, str(path), notes)
    if not run.messages:
        raise ImportFormatError(f"{path}: no assistant reply; is it a Claude Code transcript?")
    return run
