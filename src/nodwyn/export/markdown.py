"""A session as a Markdown transcript a person can paste (an issue, a chat, a document).

The conversation reads top to bottom: a heading and the session's figures, then each person's
message, each reply (thinking folded away, tool calls and their results folded with them), and
the bookkeeping (compactions, folds, model switches, sub-agents) as one italic sentence. Requests
themselves, digests and reasoning blocks are left out: they are what ``--format json`` is for.
Texts are put in fences longer than any backtick run they hold, so nothing they contain can end a
block early.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from nodwyn.replay.transcript import in_words
from nodwyn.stats.totals import Totals, percent
from nodwyn.values.events import MAIN_CTX, Event

_TICKS = re.compile(r"`+")


def fence(text: str, lang: str = "") -> list[str]:
    """``text`` in a code fence no line of it can close."""
    longest = max((len(m) for m in _TICKS.findall(text)), default=0)
    bar = "`" * max(3, longest + 1)
    return [bar + lang, *text.splitlines(), bar]


def quote(text: str) -> list[str]:
    """A person's message as a block quote (Markdown in it stays Markdown)."""
    return [("> " + line).rstrip() for line in (text.splitlines() or [""])]


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def _esc(text: str) -> str:
    """Inline text (a summary line, a tool name) with HTML's special characters escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _args(arguments: str) -> tuple[str, str]:
    """Tool-call arguments pretty-printed when they are JSON (they are sent as a string)."""
    import json

    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False), "json"
    except ValueError:
        return arguments, ""


def figures(totals: Totals) -> str:
    a = totals.all
    cost = "unknown" if a.replies and a.cost_unknown == a.replies else f"${a.cost_usd:.4f}"
    if a.cost_unknown and cost != "unknown":
        cost += f" ({a.cost_unknown} replies without a price)"
    return (
        f"{a.requests} requests · {a.prompt_tokens:,} prompt tokens · token cache rate "
        f"{percent(a.cache_rate)} · {a.output_tokens:,} output tokens · cost {cost}"
    )


def markdown(events: Iterable[Event], session: str, totals: Totals | None = None) -> Iterator[str]:
    """The transcript's lines."""
    yield f"# nodwyn session {session}"
    yield ""
    head_done = False
    results: dict[str, Event] = {}
    buffered = list(events)
    for ev in buffered:
        if ev.kind == "tool.result" and isinstance(ev.data.get("call_id"), str):
            results[ev.data["call_id"]] = ev
    shown_results: set[int] = set()
    subs = {  # sub-agent contexts: their first message is the parent model's task, not a person's
        _s(_d(ev.data).get("id"))
        for ev in buffered
        if ev.kind == "ctx.open" and _d(ev.data).get("kind") == "sub"
    }
    for ev in buffered:
        data = _d(ev.data)
        where = "" if ev.ctx == MAIN_CTX else f" · {ev.ctx}"
        if ev.kind in ("session.start", "session.resume"):
            if not head_done:
                when = ev.t[:16].replace("T", " ")
                yield f"*Model {_s(data.get('model'))} · started {when} UTC*"
                if totals is not None:
                    yield ""
                    yield f"*{figures(totals)}*"
                yield ""
                head_done = True
            else:
                when = ev.t[:16].replace("T", " ")
                yield f"*Session resumed {when} UTC with the model {_s(data.get('model'))}.*"
                yield ""
        elif ev.kind == "user.msg":
            yield f"## Task for the sub-agent{where}" if ev.ctx in subs else f"## Person{where}"
            yield ""
            yield from quote(_s(data.get("text")))
            images = data.get("images")
            if isinstance(images, list) and images:
                yield ">"
                yield f"> *({len(images)} image{'s' if len(images) != 1 else ''} attached)*"
            yield ""
        elif ev.kind == "llm.resp":
            response = _d(data.get("response"))
            text = _s(response.get("text")).strip()
            thinking = _s(response.get("thinking")).strip()
            calls = [_d(c) for c in response.get("calls") or [] if isinstance(c, dict)]
            if not (text or thinking or calls):
                continue
            yield f"### Assistant{where}"
            yield ""
            if thinking:
                yield "<details><summary>Thinking</summary>"
                yield ""
                yield from fence(thinking)
                yield ""
                yield "</details>"
                yield ""
            if text:
                yield text
                yield ""
            for call in calls:
                name = _esc(_s(call.get("name")))
                result = results.get(_s(call.get("id")))
                failed = result is not None and result.data.get("error") is True
                mark = " (failed)" if failed else "" if result is not None else " (no result recorded)"
                yield f"<details><summary>Tool call: <code>{name}</code>{mark}</summary>"
                yield ""
                args, lang = _args(_s(call.get("arguments")))
                yield from fence(args, lang)
                if result is not None:
                    shown_results.add(result.seq)
                    yield ""
                    yield "Result:"
                    yield ""
                    yield from fence(_s(result.data.get("text")))
                yield ""
                yield "</details>"
                yield ""
        elif ev.kind == "tool.result" and ev.seq not in shown_results:
            yield f"<details><summary>Tool result: <code>{_esc(_s(data.get('name')))}</code></summary>"
            yield ""
            yield from fence(_s(data.get("text")))
            yield ""
            yield "</details>"
            yield ""
        elif ev.kind == "gate.plan":
            yield f"**Plan**{where}"
            yield ""
            yield _s(data.get("text"))
            yield ""
        elif ev.kind == "note":
            yield f"*Note: {_s(data.get('text'))}*"
            yield ""
        else:
            sentence = in_words(ev)
            if sentence is not None:
                yield f"*{sentence}*"
                yield ""
                if ev.kind == "ctx.close" and isinstance(data.get("result"), str):
                    yield from quote(data["result"])
                    yield ""
                elif ev.kind == "result.fold" and isinstance(data.get("text"), str):
                    yield from quote(data["text"])
                    yield ""
