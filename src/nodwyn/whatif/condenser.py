"""OpenHands' summarising condenser: past ``max_size`` events, the middle becomes one summary.

Modelled on ``LLMSummarizingCondenser`` in OpenHands/software-agent-sdk
``openhands-sdk/openhands/sdk/context/condenser/llm_summarizing_condenser.py`` (a
``RollingCondenser``; SDK defaults ``max_size`` 120 and ``keep_first`` 4; the runs of the workload
``openhands-v1-claude-sonnet4`` were made with ``max_size`` 80, ``keep_first`` 4, used here). Before
each step the view (the events not forgotten, the latest summary at offset ``keep_first``) is
checked: when it holds more than ``max_size`` events, the first ``keep_first`` events stay, the
last ``max_size // 2 - keep_first - 1`` stay, and everything between (the previous summary
included) is forgotten and replaced by one new summary, which a separate LLM call writes from the
previous summary and the forgotten events. A request the provider refuses as too long becomes a
condensation request, handled the same way with ``len(view) // 2`` as the target.

Simplified here (ADR 0290): the system prompt is event 0 and each message one event (OpenHands
counts one action event per tool call of a reply); a result whose call was forgotten is forgotten
with it (the view's tool-call matching); the summary is a user message of ``SUMMARY_TOKENS``; the
summariser's call is a side request with its own cache slot (its prompt is the forgotten events,
not the agent's prefix) that writes ``SUMMARY_TOKENS``; a refused request costs nothing.
"""

from __future__ import annotations

from nodwyn.values.content import Message, TextPart, ToolMessage, UserMessage
from nodwyn.whatif.prepared import Prepared
from nodwyn.whatif.sent import Sent, filler, size, text_of

MAX_SIZE = 80
KEEP_FIRST = 4
SUMMARY_TOKENS = 2048  # the summary's size: OpenHands asks for a structured state summary
SLOT = "summariser"


def requests(p: Prepared, budget: int, max_size: int = MAX_SIZE, keep_first: int = KEEP_FIRST) -> list[Sent]:
    msgs = p.run.messages
    kept: list[int] = []  # conversation indexes in the view, in order
    summary: Message | None = None
    summaries = 0
    out: list[Sent] = []
    done = 0

    def view() -> list[Message]:
        body: list[Message] = [msgs[i] for i in kept]
        if summary is not None:
            body.insert(keep_first - 1, summary)  # offset keep_first counts the system prompt
        return body

    def condense(target: int, end: int) -> bool:
        """Forget the middle of the view down to ``target`` events; False if nothing is forgotten."""
        nonlocal summary, summaries
        events = 1 + len(kept) + (summary is not None)
        tail = target - keep_first - 1
        if tail <= 0 or events - tail <= keep_first:
            return False
        head = keep_first - 1  # messages in the head (the system prompt is the first event)
        tail_start = len(kept) - tail
        while tail_start < len(kept) and isinstance(msgs[kept[tail_start]], ToolMessage):
            tail_start += 1  # a result whose call is forgotten goes with it
        forgotten = kept[head:tail_start]
        if not forgotten:
            return False
        previous = f"previous summary: {text_of(summary)}" if summary else ""
        prompt = "\n".join([previous, *(text_of(msgs[i]) for i in forgotten)])
        ask = UserMessage(parts=(TextPart(text=prompt),))
        out.append(
            Sent(end=end, messages=(ask,), shown=(), side=True, slot=SLOT, output_tokens=SUMMARY_TOKENS)
        )
        summaries += 1
        summary = filler(
            f"Summary {summaries} of the {len(forgotten)} events forgotten so far.", SUMMARY_TOKENS
        )
        del kept[head:tail_start]
        return True

    for end in p.replies:
        kept.extend(range(done, end))
        done = end
        if 1 + len(kept) + (summary is not None) > max_size:
            condense(max_size // 2, end)
        while size(p, view()) > budget and condense((1 + len(kept) + (summary is not None)) // 2, end):
            pass
        out.append(Sent(end=end, messages=tuple(view()), shown=tuple((i, 1.0) for i in kept)))
    return out
