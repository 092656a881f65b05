"""A session as a Markdown transcript a person can paste (an issue, a chat, a document).

The conversation reads top to bottom: a heading and the session's figures, then each person's
message, each reply (thinking folded away, tool calls and their results folded with them), and
the bookkeeping (compactions, folds, model switches, sub-agents) as one italic sentence. Requests
themselves, digests and reasoning blocks are left out: they are what ``--format json`` is for.
Texts are put in fences longer than any backtick run they hold, so nothing they contain can end a
block early.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import assert_never

from nodwyn.replay import in_words
from nodwyn.stats import Totals, percent
from nodwyn.values.arguments import ArgumentsError, load_arguments
from nodwyn.values.events import (
    CTX_OPEN,
    MAIN_CTX,
    TOOL_RESULT,
    AnyPayload,
    Bookkeeping,
    CtxClose,
    CtxOpen,
    Event,
    GatePlan,
    LlmReq,
    LlmResp,
    Note,
    Observed,
    ResultFold,
    SessionResume,
    SessionStart,
    ToolResult,
    UserMsg,
    decoded,
)
from nodwyn.values.request import Response

_TICKS = re.compile(r"`+")


def fence(text: str, lang: str = "") -> list[str]:
    """``text`` in a code fence no line of it can close."""
    longest = max((len(m) for m in _TICKS.findall(text)), default=0)
    bar = "`" * max(3, longest + 1)
    return [bar + lang, *text.splitlines(), bar]


def quote(text: str) -> list[str]:
    """A person's message as a block quote (Markdown in it stays Markdown)."""
    return [("> " + line).rstrip() for line in (text.splitlines() or [""])]


def _details(summary: str, *parts: list[str]) -> Iterator[str]:
    """A folded block: its summary line, then each part after a blank line."""
    yield f"<details><summary>{summary}</summary>"
    for lines in parts:
        yield ""
        yield from lines
    yield from ("", "</details>", "")


def _esc(text: str) -> str:
    """Inline text (a summary line, a tool name) with HTML's special characters escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _args(arguments: str) -> tuple[str, str]:
    """Tool-call arguments pretty-printed when they are JSON (they are sent as a string)."""
    try:
        pretty = json.dumps(load_arguments(arguments), indent=2, ensure_ascii=False)
        pretty.encode("utf-8")  # a lone surrogate (a "\\ud800" escape) stays as the model wrote it
    except (ArgumentsError, UnicodeEncodeError):  # not JSON, too deep or long to read: as written
        return arguments, ""
    return pretty, "json"


def figures(totals: Totals) -> str:
    a = totals.all
    cost = "unknown" if a.replies and a.cost_unknown == a.replies else f"${a.cost_usd:.4f}"
    if a.cost_unknown and cost != "unknown":
        cost += f" ({a.cost_unknown} replies without a price)"
    return (
        f"{a.requests} requests · {a.prompt_tokens:,} prompt tokens · token cache rate "
        f"{percent(a.cache_rate)} · {a.output_tokens:,} output tokens · cost {cost}"
    )


def _results(events: list[Event]) -> dict[str, tuple[int, ToolResult]]:
    """Each tool call's result (its seq and payload), by call id."""
    out: dict[str, tuple[int, ToolResult]] = {}
    for ev in events:
        p = decoded(ev, TOOL_RESULT)
        if isinstance(p, ToolResult):
            out[p.call_id] = (ev.seq, p)
    return out


def _reply(
    r: Response, where: str, results: dict[str, tuple[int, ToolResult]], shown: set[int]
) -> Iterator[str]:
    """A reply: its thinking folded away, its text, each call folded with its result."""
    text, thinking = r.text.strip(), r.thinking.strip()
    if not (text or thinking or r.calls):
        return
    yield f"### Assistant{where}"
    yield ""
    if thinking:
        yield from _details("Thinking", fence(thinking))
    if text:
        yield text
        yield ""
    for call in r.calls:
        found = results.get(call.id)
        mark = " (no result recorded)" if found is None else " (failed)" if found[1].error else ""
        parts = [fence(*_args(call.arguments))]
        if found is not None:
            shown.add(found[0])
            parts += [["Result:"], fence(found[1].text)]
        yield from _details(f"Tool call: <code>{_esc(call.name)}</code>{mark}", *parts)


def session_markdown(events: Iterable[Event], session: str, totals: Totals | None = None) -> Iterator[str]:
    """The transcript's lines. An event whose payload does not decode (a damaged log) is named
    in one line, not guessed at."""
    yield f"# nodwyn session {session}"
    yield ""
    transcript = _Transcript(list(events), totals)
    for ev in transcript.events:
        yield from transcript.event(ev)


class _Transcript:
    """What the lines of one event depend on: whether the heading is written, the tool results
    shown beside their calls, and the sub-agent contexts."""

    def __init__(self, events: list[Event], totals: Totals | None) -> None:
        self.events = events
        self.totals = totals
        self.head_done = False
        self.results = _results(events)
        self.shown_results: set[int] = set()
        self.subs = {  # sub-agent contexts: their first message is the parent model's task, not a person's
            p.id
            for p in (decoded(ev, CTX_OPEN) for ev in events)
            if isinstance(p, CtxOpen) and p.kind == "sub"
        }

    def event(self, ev: Event) -> Iterator[str]:
        where = "" if ev.ctx == MAIN_CTX else f" · {ev.ctx}"
        p = decoded(ev)
        match p:
            case None:
                yield f"*Event #{ev.seq} ({ev.kind}) does not decode; `nodwyn replay` shows it as recorded.*"
                yield ""
            case SessionStart() | SessionResume():
                yield from self.start(p.model, ev.t[:16].replace("T", " "))
            case UserMsg():
                yield from self.user(p, ev.ctx, where)
            case LlmResp():
                yield from _reply(p.response, where, self.results, self.shown_results)
            case ToolResult() if ev.seq not in self.shown_results:  # not shown beside its call
                yield from _details(f"Tool result: <code>{_esc(p.name)}</code>", fence(p.text))
            case ToolResult():
                pass  # shown beside its call
            case GatePlan():
                yield from (f"**Plan**{where}", "", p.text, "")
            case Note():
                yield from (f"*Note: {p.text}*", "")
            case Bookkeeping():
                yield from _in_words(ev, p)
            case LlmReq() | Observed():
                pass  # a request, or an imported session's bookkeeping: no text of the conversation
            case _:
                assert_never(p)

    def start(self, model: str, when: str) -> Iterator[str]:
        """The heading's model line (and the figures) at the first start, a line at each resume."""
        if self.head_done:
            yield f"*Session resumed {when} UTC with the model {model}.*"
            yield ""
            return
        yield f"*Model {model} · started {when} UTC*"
        if self.totals is not None:
            yield ""
            yield f"*{figures(self.totals)}*"
        yield ""
        self.head_done = True

    def user(self, p: UserMsg, ctx: str, where: str) -> Iterator[str]:
        yield f"## Task for the sub-agent{where}" if ctx in self.subs else f"## Person{where}"
        yield ""
        yield from quote(p.text)
        if p.images:
            n = len(p.images)
            yield ">"
            yield f"> *({n} image{'s' if n != 1 else ''} attached)*"
        yield ""


def _in_words(ev: Event, p: AnyPayload) -> Iterator[str]:
    """Any other event the transcript words, with what a closed sub-agent or a fold carried."""
    sentence = in_words(ev)
    if sentence is None:
        return
    yield f"*{sentence}*"
    yield ""
    carried = p.result if isinstance(p, CtxClose) else p.text if isinstance(p, ResultFold) else None
    if carried is not None:
        yield from quote(carried)
        yield ""
