"""Each peer policy on small hand-made conversations: the requests it sends, worked out by hand
from the rule its module cites."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodwyn.imports import find, load
from nodwyn.imports.run import Run, Stand, user
from nodwyn.imports.run import Sent as SentRecord
from nodwyn.values.content import AssistantMessage, Message, TextPart, ToolCall, ToolMessage, UserMessage
from nodwyn.values.model import Prices
from nodwyn.values.request import Usage
from nodwyn.whatif import POLICIES, compaction, compare, condenser, masking, prune, recorded
from nodwyn.whatif.measure import figures, prompt_cost
from nodwyn.whatif.prepared import prepare
from nodwyn.whatif.sent import Sent, measure, size

BIG = 10**9  # a budget nothing reaches
OPENHANDS = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "imports"
    / "openhands-v1"
    / "3880c06039224ff586eff2db1186474e"
)


def step(k: int, result: str) -> tuple[AssistantMessage, ToolMessage]:
    call = ToolCall(id=f"c{k}", name="bash", arguments=f'{{"command": "step {k}"}}')
    return AssistantMessage(text=f"step {k}", calls=(call,)), ToolMessage(
        call_id=call.id, name="bash", text=result
    )


def run_of(*msgs: Message) -> Run:
    return Run(name="hand-made", format="test", system="you are a test", tools=(), messages=tuple(msgs))


def loop(results: list[str], task: str = "fix the bug") -> tuple[Message, ...]:
    """The task, one reply and result per entry of ``results``, and a last reply."""
    out: list[Message] = [user(task)]
    for k, r in enumerate(results):
        out.extend(step(k, r))
    out.append(AssistantMessage(text="done"))
    return tuple(out)


def main(sent: list[Sent]) -> list[Sent]:
    return [s for s in sent if not s.side]


# -- SWE-agent: LastNObservations ---------------------------------------------------------------


def test_masking_replaces_all_but_the_last_n_observations_and_never_the_task() -> None:
    msgs = loop(["a\nb", "c", "d\ne\nf"])  # U0 A1 T2 A3 T4 A5 T6 A7
    sent = masking.requests(prepare(run_of(*msgs)), BIG, n=1)
    assert [s.end for s in sent] == [1, 3, 5, 7]
    # observations before A7: U0 T2 T4 T6; all but the first and the last one are masked
    t2, t4 = msgs[2], msgs[4]
    assert isinstance(t2, ToolMessage) and isinstance(t4, ToolMessage)
    assert sent[3].messages == (
        msgs[0],
        msgs[1],
        ToolMessage(call_id="c0", name="bash", text="Old environment output: (2 lines omitted)"),
        msgs[3],
        ToolMessage(call_id="c1", name="bash", text="Old environment output: (1 lines omitted)"),
        msgs[5],
        msgs[6],
    )
    assert sent[2].messages == (*msgs[:2], sent[3].messages[2], *msgs[3:5])  # before A5: T2 masked
    assert sent[1].messages == msgs[:3] and sent[0].messages == msgs[:1]
    assert dict(sent[3].shown) == {0: 1.0, 1: 1.0, 2: 0.0, 3: 1.0, 4: 0.0, 5: 1.0, 6: 1.0}


def test_masking_polls_in_steps() -> None:
    msgs = loop(["a", "b", "c"])
    sent = masking.requests(prepare(run_of(*msgs)), BIG, n=1, polling=2)
    # 3 observations before A5: (3 // 2) * 2 - 1 = 1, nothing masked; 4 before A7: T2 and T4
    assert sent[2].messages == msgs[:5]
    assert [m.text for m in sent[3].messages if isinstance(m, ToolMessage)] == [
        "Old environment output: (1 lines omitted)",
        "Old environment output: (1 lines omitted)",
        "c",
    ]


def test_the_default_is_the_papers_last_five() -> None:
    msgs = loop([f"out {k}" for k in range(8)])
    last = masking.requests(prepare(run_of(*msgs)), BIG)[-1]
    kept = [m.text for m in last.messages if isinstance(m, ToolMessage) and not m.text.startswith("Old")]
    assert kept == [f"out {k}" for k in range(3, 8)]


# -- OpenHands: LLMSummarizingCondenser -----------------------------------------------------------


def test_the_condenser_keeps_the_head_and_the_tail_and_summarises_the_middle() -> None:
    msgs = loop([f"out {k}" for k in range(5)])  # U0 A1 T2 ... A9 T10 A11
    sent = condenser.requests(prepare(run_of(*msgs)), BIG, max_size=10, keep_first=2)
    # up to A9 the view (system + messages) holds at most 10 events: every request whole
    assert [s.messages for s in main(sent)[:5]] == [msgs[:e] for e in (1, 3, 5, 7, 9)]
    # before A11: 12 events > 10 -> head = system + U0, tail = 10 // 2 - 2 - 1 = 2 events (A9 T10)
    side, last = sent[5], sent[6]
    assert side.side and side.slot == condenser.SLOT and side.output_tokens == condenser.SUMMARY_TOKENS
    asked = side.messages[0]
    assert isinstance(asked, UserMessage) and isinstance(asked.parts[0], TextPart)
    assert asked.parts[0].text.split("\n")[1:] == [
        "step 0",
        "out 0",
        "step 1",
        "out 1",
        "step 2",
        "out 2",
        "step 3",
        "out 3",
    ]
    assert last.messages[0] == msgs[0] and last.messages[2:] == msgs[9:11]
    summary = last.messages[1]
    assert size(prepare(run_of(summary)), [summary]) == pytest.approx(condenser.SUMMARY_TOKENS, rel=0.05)
    assert [i for i, _ in last.shown] == [0, 9, 10]


def test_a_result_whose_call_is_forgotten_goes_with_it() -> None:
    msgs = loop([f"out {k}" for k in range(4)])  # U0 A1 T2 A3 T4 A5 T6 A7 T8 A9
    sent = condenser.requests(prepare(run_of(*msgs)), BIG, max_size=8, keep_first=2)
    # before A9: 10 events > 8 -> tail of 8 // 2 - 3 = 1 event is T8, whose call A7 is forgotten
    assert main(sent)[-1].messages[0] == msgs[0] and len(main(sent)[-1].messages) == 2


def test_a_request_over_the_budget_condenses_to_half_the_view() -> None:
    msgs = loop(["x" * 3000 for _ in range(6)])  # U0 A1 T2 ... A11 T12 A13
    p = prepare(run_of(*msgs))
    budget = size(p, msgs[:9])  # A9's request fits, A11's does not
    sent = condenser.requests(p, budget, max_size=100, keep_first=2)
    assert [s.messages for s in main(sent)[:5]] == [msgs[:e] for e in (1, 3, 5, 7, 9)]
    # before A11: 12 events over the budget -> target 12 // 2 = 6: head system + U0, summary, 3 from the tail
    # (A9 T10 then... the 3-event tail starts at T8, a result whose call is forgotten, so it is A9 T10)
    before_a11 = main(sent)[5]
    assert before_a11.messages[0] == msgs[0] and before_a11.messages[2:] == msgs[9:11]
    assert sum(s.side for s in sent) >= 1


# -- opencode: prune ----------------------------------------------------------------------------


def test_prune_clears_old_outputs_past_the_protected_turns_when_it_frees_enough() -> None:
    a1, t2 = step(1, "x" * 200_000)  # 50,000 estimated tokens
    a5, t6 = step(5, "small")
    a9, t10 = step(9, "small too")
    msgs = (
        user("first"),  # U0
        a1,
        t2,
        AssistantMessage(text="done 1"),  # A3
        user("second"),  # U4
        a5,
        t6,
        AssistantMessage(text="done 2"),  # A7
        user("third"),  # U8
        a9,
        t10,
        AssistantMessage(text="done 3"),  # A11
        user("fourth"),  # U12
        AssistantMessage(text="done 4"),  # A13
    )
    sent = prune.requests(prepare(run_of(*msgs)), BIG)
    ends = [s.end for s in sent]
    assert ends == [1, 3, 5, 7, 9, 11, 13] and not any(s.side for s in sent)
    # at the end of the third turn (U12 arrives) the walk passes U8 and U4; T2's 50,000 tokens pass
    # PRUNE_PROTECT (40,000) and free more than PRUNE_MINIMUM (20,000); before that nothing is older
    # than two user turns
    for s in sent[:-1]:
        assert s.messages == msgs[: s.end]
    cleared = ToolMessage(call_id="c1", name="bash", text=prune.CLEARED)
    assert sent[-1].messages == (*msgs[:2], cleared, *msgs[3:13])
    assert dict(sent[-1].shown)[2] == 0.0


def test_prune_keeps_marks_that_free_too_little() -> None:
    assert prune.marks(loop(["x" * 100_000]) + (user("b"), user("c")), 6, set()) == set()  # 25,000 < 40,000


def test_prune_never_fires_in_one_user_turn() -> None:
    msgs = loop(["x" * 200_000, "y" * 200_000, "z"])
    sent = prune.requests(prepare(run_of(*msgs)), BIG)
    assert all(s.messages == msgs[: s.end] for s in sent)


# -- Claude Code: compaction near the limit -----------------------------------------------------


def test_compaction_summarises_the_conversation_and_keeps_the_latest_turn() -> None:
    msgs = loop(["x" * 3000] + ["y" * 300] * 4)  # U0 A1 T2 A3 T4 A5 T6 A7 T8 A9 T10 A11
    p = prepare(run_of(*msgs))
    budget = size(p, msgs[:5])  # A5's request is the last that fits
    sent = compaction.requests(p, budget, trigger=1.0, summary_tokens=100)
    assert [s.messages for s in sent[:3]] == [msgs[:1], msgs[:3], msgs[:5]]
    ask, after = sent[3], sent[4]
    assert ask.side and ask.slot == "main" and ask.messages == (*msgs[:7], compaction.ASK)
    summary = after.messages[0]
    assert after.messages[1:] == msgs[5:7]  # the latest turn: A5 and its result
    assert after.end == 7 and [i for i, _ in after.shown] == [5, 6]
    # then the request grows from the summary (until it is over again)
    assert sent[5].messages == (summary, *msgs[5:9]) and sent[6].messages == (summary, *msgs[5:11])


def test_the_compaction_call_extends_the_previous_request() -> None:
    msgs = loop(["x" * 600 for _ in range(5)])
    p = prepare(run_of(*msgs))
    measured = measure(p, compaction.requests(p, size(p, msgs[:5]), trigger=1.0, summary_tokens=100))
    assert measured[3].side and measured[3].cached == measured[2].stream  # same prefix, instruction appended
    assert measured[4].cached < measured[3].stream  # the summary moves the prefix
    assert not measured[4].task_kept


# -- measures and the table -------------------------------------------------------------------


def test_a_side_call_in_its_own_slot_leaves_the_main_prefix_alone() -> None:
    msgs = loop(["a", "b"])
    p = prepare(run_of(*msgs))
    side = Sent(end=3, messages=(user("summarise"),), shown=(), side=True, slot="other", output_tokens=10)
    plain = [Sent(end=e, messages=msgs[:e], shown=tuple((i, 1.0) for i in range(e))) for e in (1, 3, 5)]
    m = measure(p, [plain[0], plain[1], side, plain[2]])
    assert m[2].cached == 0 and m[3].cached == m[1].stream
    f = figures([(m, p.minimum)], BIG)
    assert f.requests == 3 and f.side_calls == 1 and f.output_tokens == 10


def test_cost_prices_writes_reads_and_summaries() -> None:
    prices = Prices(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75)
    assert prompt_cost(1_000_000, 2_000_000, 100_000, prices) == pytest.approx(3.75 + 0.6 + 1.5)
    assert prompt_cost(1_000_000, 0, 0, Prices(input=2.0)) == pytest.approx(2.0)


def test_compare_gives_every_policy_and_whole_is_the_minimum() -> None:
    run = run_of(*loop(["x" * 3000 for _ in range(30)]))
    out = compare([run], 8192, Prices(input=1.0))
    assert list(out) == list(POLICIES)
    assert out["whole"].uncached_ratio == pytest.approx(1.0) and out["whole"].over_budget > 0
    for name in ("nodwyn", "sliding", "openhands", "opencode", "claude-code"):
        assert out[name].over_budget == 0, name
    assert out["claude-code"].side_calls > 0 and out["openhands"].side_calls > 0
    assert all(f.usd is not None and f.usd > 0 for f in out.values())
    assert compare([run], 8192)["nodwyn"].usd is None


# -- as sent: the agent's own requests, as its run records them ---------------------------------


def test_as_sent_replays_the_recorded_views() -> None:
    msgs = loop(["a", "b", "c"])  # U0 A1 T2 A3 T4 A5 T6 A7
    summary = user("summary of steps 0 and 1")
    views = [
        SentRecord(view=None, usage=Usage(prompt_tokens=10)),
        SentRecord(view=None),
        SentRecord(view=(0, Stand(message=summary, why="condensation", of=(1, 2, 3, 4)))),
        SentRecord(view=(0, Stand(message=summary, why="condensation", of=(1, 2, 3, 4)), 5, 6)),
    ]
    run = Run(name="r", format="test", system="s", tools=(), messages=msgs, requests=tuple(views))
    got = recorded.views(run)
    assert got == [(0,), (0, 1, 2), (0, summary), (0, summary, 5, 6)]
    sent = recorded.requests(prepare(run), got)
    assert [s.messages for s in sent] == [
        msgs[:1],
        msgs[:3],
        (msgs[0], summary),
        (msgs[0], summary, *msgs[5:7]),
    ]
    assert [i for i, _ in sent[3].shown] == [0, 5, 6] and sent[3].end == 7
    assert recorded.views(run_of(*msgs)) is None  # a run that records no request
    nothing = Run(name="r", format="test", system="s", tools=(), messages=msgs, requests=(SentRecord(),) * 4)
    assert recorded.views(nothing) is None  # nor a request it records nothing of


def test_the_condenser_model_forgets_what_openhands_forgot_on_its_own_run() -> None:
    """On the committed OpenHands run (max_size 80, keep_first 4; tests/data/imports/SOURCES.md) the
    model condenses before the same requests as OpenHands did and shows the same conversation
    messages in every request (the import keeps a recorded view's calls and results matched, as
    OpenHands' own view does)."""
    (found,) = find(OPENHANDS)
    run = load(found)
    p = prepare(run)
    views = recorded.views(run)
    assert views is not None
    as_sent = recorded.requests(p, views)
    model = condenser.requests(p, BIG)
    assert [s.end for s in model if s.side] == [as_sent[k].end for k in (40, 61)]
    for a, m in zip(as_sent, main(model), strict=True):
        assert [i for i, _ in a.shown] == [i for i, _ in m.shown], a.end
