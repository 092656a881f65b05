"""SWE-agent's observation masking: every observation but the last ``n`` replaced by a line count.

Modelled on ``LastNObservations`` in SWE-agent/SWE-agent ``sweagent/agent/history_processors.py``
(the history processor of the SWE-agent paper; ``n: 5`` in its 0.7 config
``config/sweagent_0_7/07.yaml`` and in the runs of the workload ``sweagent-lm32b-lastn5``;
``polling`` defaults to 1). On every query the processor lists the observations (the instance
template and each environment output), never touches the first one (the instance template), and
replaces the content of ``observations[1 : (len // polling) * polling - n]`` with
``Old environment output: (L lines omitted)``, L the number of lines it had. The processor's own
docstring says this breaks prompt caching: the n+1-th latest observation changes on every query.

Here an observation is every user message and tool result of the conversation (the task first).
SWE-agent keeps no budget: on a context overflow it ends the run (``exit_context``); this model
sends on and the request counts as over the budget (ADR 0290).
"""

from __future__ import annotations

from nodwyn.values.content import Message, TextPart, ToolMessage, UserMessage
from nodwyn.whatif.prepared import Prepared
from nodwyn.whatif.sent import Sent, text_of

N = 5  # last_n_observations: n
POLLING = 1  # its default


def masked(m: Message) -> Message:
    """``m`` with its content replaced as ``LastNObservations`` replaces it."""
    note = f"Old environment output: ({len(text_of(m).splitlines())} lines omitted)"
    if isinstance(m, ToolMessage):
        return ToolMessage(call_id=m.call_id, name=m.name, text=note, error=m.error)
    return UserMessage(parts=(TextPart(text=note),))


def requests(p: Prepared, budget: int, n: int = N, polling: int = POLLING) -> list[Sent]:
    msgs = p.run.messages
    observations: list[int] = []
    out: list[Sent] = []
    done = 0
    cache: dict[int, Message] = {}
    for end in p.replies:
        observations += [i for i in range(done, end) if isinstance(msgs[i], (UserMessage, ToolMessage))]
        done = end
        last = max(0, (len(observations) // polling) * polling - n)
        omit = set(observations[1:last])
        sent = tuple(cache.setdefault(i, masked(msgs[i])) if i in omit else msgs[i] for i in range(end))
        shown = tuple((i, 0.0 if i in omit else 1.0) for i in range(end))
        out.append(Sent(end=end, messages=sent, shown=shown))
    return out
