"""Whole-conversation compaction near the context limit, as Claude Code does it (and opencode on overflow).

Claude Code (public docs, code.claude.com ``context-window``): when the conversation nears the
context limit it is compacted automatically: the model is asked to summarise the conversation, and
the session goes on from the summary (project instructions are re-read; the rest survives only as
the summary). The trigger is a share of the window; Anthropic does not publish it, third parties
report about 95% (and a ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` variable), so ``TRIGGER`` is 0.95 of
the budget. opencode does the same on overflow (``SessionCompaction.isOverflow`` in
anomalyco/opencode ``packages/opencode/src/session/compaction.ts``: input + cache read + output
over the model's usable context), which ``prune`` uses with a trigger of the whole budget.

Modelled (ADR 0290): before a request that would exceed ``trigger`` × budget, the policy sends the
compaction call (the request as it stands plus the instruction, in the same cache slot: it extends
the previous request) which writes a summary of ``SUMMARY_TOKENS``; the request then holds the
summary and the latest turn (the last reply and its results, kept so that the replayed reply still
answers what it answered) and grows from there until the next compaction.
"""

from __future__ import annotations

from collections.abc import Callable

from nodwyn.values.content import AssistantMessage, Message, TextPart, UserMessage
from nodwyn.whatif.prepared import Prepared
from nodwyn.whatif.sent import Sent, filler, size

TRIGGER = 0.95
SUMMARY_TOKENS = 2048
ASK = UserMessage(
    parts=(
        TextPart(text="Summarise the conversation so far so that the work can continue from the summary."),
    )
)


def latest_turn(msgs: tuple[Message, ...], end: int, floor: int) -> int:
    """Where the latest turn before ``end`` starts: its last reply (not before ``floor``)."""
    for i in range(end - 1, floor - 1, -1):
        if isinstance(msgs[i], AssistantMessage):
            return i
    return end


def requests(
    p: Prepared,
    budget: int,
    trigger: float = TRIGGER,
    render: Callable[[int, Message], Message] | None = None,
    prune: Callable[[int, int], None] | None = None,
    summary_tokens: int = SUMMARY_TOKENS,
) -> list[Sent]:
    """``render(i, message)``: the message as the agent shows it (opencode's pruned results);
    ``prune(end, start)``: called before each request with the first message shown after the
    latest summary (opencode prunes at the end of a user turn, back to its latest compaction)."""
    msgs = p.run.messages
    show = render or (lambda i, m: m)
    start = 0  # first conversation message the request shows after the summary (0: no summary yet)
    summary: Message | None = None
    compactions = 0
    out: list[Sent] = []
    for end in p.replies:
        if prune is not None:
            prune(end, start)

        def body(start: int = start, end: int = end, summary: Message | None = summary) -> list[Message]:
            head = [summary] if summary is not None else []
            return [*head, *(show(i, msgs[i]) for i in range(start, end))]

        current = body()
        cut = latest_turn(msgs, end, start)
        if size(p, current) > trigger * budget and (summary is None or cut > start):
            out.append(
                Sent(end=end, messages=(*current, ASK), shown=(), side=True, output_tokens=summary_tokens)
            )
            compactions += 1
            summary = filler(f"Summary {compactions} of the conversation so far.", summary_tokens)
            start = cut
            current = body(start, end, summary)
        shown = tuple((i, 1.0 if show(i, msgs[i]) is msgs[i] else 0.0) for i in range(start, end))
        out.append(Sent(end=end, messages=tuple(current), shown=shown))
    return out
