"""The benchmark's measures on small constructed conversations: canonical sizes, the shared prefix,
the figures, and the sliding-window baseline, each checked against a direct computation."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nodwyn.imports.run import Run, user
from nodwyn.stats.prefix import Encoder, common_bytes
from nodwyn.values.canonical import canonical_bytes
from nodwyn.values.codec import request_to_json
from nodwyn.values.content import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from nodwyn.values.request import Request, ToolSpec
from nodwyn.whatif.engine import Sizing, replay
from nodwyn.whatif.measure import Measured, content_size, figures, recent_shares, request_size
from nodwyn.whatif.prepared import prepare
from nodwyn.whatif.sliding import append_only
from nodwyn.whatif.sliding import replay as sliding

TOOL = ToolSpec(
    name="bash",
    description="run a command",
    parameters={"type": "object", "properties": {"command": {"type": "string"}}},
)
text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=30)


def conversation(sizes: list[int], *, task: str = "fix the bug") -> Run:
    """A task, then one reply per entry of ``sizes``, each with a call whose result has that many bytes."""
    msgs: list[Message] = [user(task)]
    for k, n in enumerate(sizes):
        call = ToolCall(id=f"c{k}", name="bash", arguments=f'{{"command": "step {k}"}}')
        msgs.append(AssistantMessage(text=f"thinking about step {k}", calls=(call,)))
        msgs.append(ToolMessage(call_id=call.id, name="bash", text="x" * n))
    msgs.append(AssistantMessage(text="done"))
    return Run(
        name="constructed", format="test", system="you are a test", tools=(TOOL,), messages=tuple(msgs)
    )


def request_of(run: Run, messages: tuple[Message, ...]) -> Request:
    return Request(system=run.system, tools=run.tools, messages=messages)


@settings(max_examples=60, deadline=None)
@given(
    system=text,
    texts=st.lists(text, max_size=5),
    max_output=st.one_of(st.none(), st.integers(min_value=0, max_value=10**6)),
    with_tool=st.booleans(),
)
def test_request_size_is_the_canonical_requests(
    system: str, texts: list[str], max_output: int | None, with_tool: bool
) -> None:
    msgs: list[Message] = []
    for i, t in enumerate(texts):
        if i % 3 == 0:
            msgs.append(user(t))
        elif i % 3 == 1:
            msgs.append(
                AssistantMessage(text=t, thinking=t[:3], calls=(ToolCall(id=t, name="bash", arguments="{}"),))
            )
        else:
            msgs.append(ToolMessage(call_id=t, name="bash", text=t, error=bool(len(t) % 2)))
    req = Request(
        system=system, tools=(TOOL,) if with_tool else (), messages=tuple(msgs), max_output=max_output
    )
    parts = Encoder()
    tools = [parts.tool(t) for t in req.tools]
    body = [parts.message(m) for m in req.messages]
    expected = canonical_bytes(request_to_json(req))
    assert request_size(parts.system(system), tools, body, max_output) == len(expected)


def test_append_only_costs_exactly_the_minimum() -> None:
    run = conversation([100, 2000, 50, 4000, 10])
    p = prepare(run)
    reqs = append_only(p)
    assert len(reqs) == len(run.replies)
    streams = []
    for k, end in enumerate(run.replies):
        parts = [canonical_bytes(run.system), *p.tools, *p.messages[:end]]
        streams.append(sum(len(x) for x in parts))
        assert reqs[k].stream == streams[-1]
        assert reqs[k].cached == (streams[k - 1] if k else 0)
        assert reqs[k].size == len(canonical_bytes(request_to_json(request_of(run, run.messages[:end]))))
    f = figures([(reqs, p.minimum)], budget=10**6)
    assert p.minimum == streams[-1]
    assert f.uncached_ratio == 1.0
    assert f.cached_share == sum(streams[:-1]) / sum(streams)
    assert (f.full_prefills, f.over_budget, f.visible) == (0, 0, 1.0)


def test_figures_count_full_prefills_against_the_previous_request() -> None:
    def m(stream: int, cached: int) -> Measured:
        return Measured(stream=stream, cached=cached, size=stream, visible=1, conversation=2)

    # second request keeps 40 of the previous 100 (a full prefill); third keeps 60 of 120 (not)
    f = figures([([m(100, 0), m(120, 40), m(150, 60)], 200)], budget=40)
    assert f.full_prefills == 1
    assert f.cached_share == 100 / 370
    assert f.uncached_ratio == 270 / 200
    assert f.over_budget == 1  # 100, 120 and 150 bytes are 34, 40 and 50 tokens
    assert abs(f.occupancy - (100 + 120 + 150) / 3 / 40 / 3) < 1e-12
    assert f.visible == 0.5


def test_sliding_window_keeps_the_task_and_the_latest_messages_that_fit() -> None:
    run = conversation([3000] * 12)
    p = prepare(run)
    budget = 4000  # tokens: 12,000 bytes, about three turns
    reqs = sliding(p, budget)
    prev: list[bytes] = []
    for k, end in enumerate(run.replies):
        # the request the baseline describes, rebuilt directly
        for cut in range(1, end + 1):
            kept = (run.messages[0], *run.messages[cut:end])
            if isinstance(run.messages[cut] if cut < end else None, ToolMessage):
                continue
            size = len(canonical_bytes(request_to_json(request_of(run, kept))))
            if size <= budget * 3 or cut >= max(i for i in run.replies if i < end or i == run.replies[0]):
                break
        assert reqs[k].size == size, k
        parts = [canonical_bytes(run.system), *p.tools, *(p.parts.message(x) for x in kept)]
        assert reqs[k].stream == sum(len(x) for x in parts)
        assert reqs[k].cached == (common_bytes(b"".join(prev), b"".join(parts)) if prev else 0)
        assert reqs[k].visible == sum(content_size(x) for x in kept)
        assert reqs[k].conversation == sum(content_size(x) for x in run.messages[:end])
        assert isinstance(kept[0], UserMessage) and not isinstance(
            kept[1] if len(kept) > 1 else None, ToolMessage
        )
        prev = parts
    f = figures([(reqs, p.minimum)], budget)
    assert f.over_budget == 0
    assert f.full_prefills > 0  # once full, every request drops something at the front
    assert f.uncached_ratio > 1.5
    assert 0 < f.visible < 1


def test_sliding_window_keeps_the_latest_turn_over_the_budget() -> None:
    run = conversation([100, 30_000, 100])
    p = prepare(run)
    reqs = sliding(p, 2000)  # 6,000 bytes: the 30,000-byte result cannot fit
    assert reqs[2].size > 2000 * 3
    assert reqs[2].visible >= 30_000
    assert reqs[3].size <= 2000 * 3  # the next request drops it again
    assert figures([(reqs, p.minimum)], 2000).over_budget == 1


def test_recent_shares_count_the_last_tokens_of_the_conversation() -> None:
    # three messages of 30,000, 20,000 and 10,000 content bytes: the last 8 Ki tokens are the
    # last 24,576 bytes (all of the third message, 14,576 of the second)
    content = (0, 30_000, 50_000, 60_000)
    r8, r16 = recent_shares(content, 3, [(0, 1.0), (1, 1.0), (2, 1.0)])
    assert r8 == r16 == 1.0
    r8, r16 = recent_shares(content, 3, [(0, 1.0), (2, 1.0)])  # the second message elided
    assert r8 == 10_000 / 24_576
    assert r16 == (19_152 + 10_000) / 49_152  # 16 Ki reaches back into the first message
    r8, _ = recent_shares(content, 3, [(1, 1.0), (2, 0.5)])  # the third capped to half
    assert r8 == (14_576 + 5_000) / 24_576
    assert recent_shares((0, 300), 1, [(0, 1.0)]) == (1.0, 1.0)  # shorter than the window: all of it


def test_the_engine_reports_recent_shares_and_the_task() -> None:
    run = conversation([2500] * 60)
    p = prepare(run)
    for version in (19, 20):
        res = replay(p, 16 * 1024, Sizing(version=version))
        f = figures([(res.requests, p.minimum)], 16 * 1024)
        assert f.task_kept == 1.0  # a person's message is never elided
        assert 0 < f.visible < f.recent16 <= f.recent8 <= 1.0
        assert res.requests[0].recent == (1.0, 1.0)
