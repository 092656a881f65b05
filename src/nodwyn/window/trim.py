"""Hysteresis: above the trim line, elide oldest first down to low water, then leave it alone.

Called only when the estimate is over the trim line (high water, or the ceiling for a headroom
request, v10). Candidates, oldest first: tool results and image attachments, then assistant text
(replies, summaries, a closed narrowing's result); never a person's message or a plan. The four
most recent messages are protected. With pairs (v16) eliding a reply also omits its results, a
protected result protects its batch, and a batch still waiting for results is not newly elided.
Blocks (v18): eliding an entry makes the blocks of every later reply stale, and they leave the
estimate with it. The accounting is exact: the window checks it against the re-rendered request.
The pass itself is ``units.choose`` without v20's rules (results first, then replies, to low water).
"""

PROTECTED = 4  # the most recent messages, never elided
