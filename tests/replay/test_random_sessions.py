"""Random sessions, recorded through the real log and window, replay request for request.

Each example is a seeded random script of turns with tool batches (results large enough to be capped
and trimmed under small limits), folds, plans, tool-less, partial and headroom turns, images some of
which are withheld, reasoning blocks for this model or another, sub-agents, a compaction, summaries
added and revoked on the closed session, and resumes under other recipe versions and limits. Every
request must replay, by ``verify_all`` and by ``replay_request``, to the bytes it sent.
"""

from __future__ import annotations

import contextlib
import random
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodwyn.errors import ConfigError
from nodwyn.log import Store
from nodwyn.replay.summaries import add_summary, revoke_summary
from nodwyn.testing import ORIGIN, SessionBuilder, recipe
from nodwyn.values.content import ThinkingBlock
from nodwyn.values.events import CtxClose, CtxOpen, GatePlan, ResultFold
from nodwyn.values.recipe import KNOWN_VERSIONS, Recipe
from nodwyn.window import TurnOptions

from .conftest import OTHER_ORIGIN, assert_replays


def _recipe(rng: random.Random) -> Recipe:
    high = rng.choice([600, 900, 1_500, 60_000])
    return recipe(
        rng.choice([v for v in KNOWN_VERSIONS if v >= 2]),
        high_water=high,
        low_water=high // 2,
        ceiling=high + 400,
        max_result_tokens=rng.choice([60, 200, 3_072]),
        output_reserve=256,
    )


def _script(store: Store, rng: random.Random) -> SessionBuilder:
    s = SessionBuilder(store=store, recipe=_recipe(rng))
    ctx = "main"
    results: list[int] = []
    summaries: list[int] = []
    compacted = False
    for step in range(rng.randint(3, 9)):
        op = rng.random()
        if step > 0 and op < 0.14 and s.log is not None:  # step 0 always sends a request
            s.close()
            with store.open(s.id, write=True) as log:
                events = list(log.read())
                users = [e.seq for e in events if e.kind == "user.msg" and e.ctx == ctx]
                if summaries and rng.random() < 0.5:
                    revoke_summary(log, summaries.pop(rng.randrange(len(summaries))))
                elif len(users) >= 2:
                    i = rng.randrange(len(users) - 1)
                    with contextlib.suppress(ConfigError):  # a span the rules refuse: no summary
                        summaries.append(add_summary(log, users[i], users[i + 1] - 1, f"summary {step}").seq)
            s.resume(_recipe(rng))
            continue
        if op < 0.2 and results:
            s.add(ResultFold(target=rng.choice(results), text=f"[folded at step {step}]"), ctx)
        if op < 0.26:
            s.add(GatePlan(text=f"plan {step}:\n1. look\n2. fix"), ctx)
        if op > 0.93 and not compacted and ctx == "main":
            s.add(CtxOpen(id="compact", kind="narrow", lasting=True, system="Go on."))
            ctx, compacted = "compact", True
            results = []
        images = None
        withheld: dict[str, str] = {}
        if rng.random() < 0.15:
            digest = "sha256:" + f"{step:02x}" * 32
            images = [{"digest": digest, "media_type": "image/png", "width": 600, "height": 400}]
            if rng.random() < 0.5:
                withheld[digest] = "the model takes no images"
        s.user(f"task {step}: " + "please " * rng.randint(1, 40), ctx, images)
        for _ in range(rng.randint(0, 3)):
            turn = rng.choice(
                [
                    None,
                    None,
                    TurnOptions(no_tools=True),
                    TurnOptions(offered_tools=("fs-read",)),
                    TurnOptions(headroom=True),
                ]
            )
            req = s.request(ctx, rng.choice([ORIGIN, ORIGIN, OTHER_ORIGIN]), turn, withheld)
            n = rng.randint(1, 2)
            blocks = (
                [ThinkingBlock(type="thinking", origin=ORIGIN, data=f"sig{step}", text="hm")]
                if rng.random() < 0.3
                else []
            )
            _, calls = s.reply(
                req,
                thinking="thinking " * rng.randint(0, 5),
                calls=[("fs-read" if rng.random() < 0.5 else "shell", f'{{"n":{k}}}') for k in range(n)],
                blocks=blocks,
            )
            if rng.random() < 0.1:
                sub = f"sub{len(s.sent)}"
                s.add(CtxOpen(id=sub, kind="sub", parent_call=calls[0].id), ctx)
                s.user("sub task", sub)
                s.reply(s.request(sub), "sub done")
                s.add(CtxClose(id=sub), ctx)
            for call in calls:
                body = "".join(
                    f"line {i} " + "x" * rng.randint(0, 60) + "\n" for i in range(rng.randint(1, 80))
                )
                results.append(s.result(call, body, ctx, error=rng.random() < 0.1).seq)
        s.reply(s.request(ctx, ORIGIN, None, withheld), f"answer {step}")
    s.close()
    return s


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_random_sessions_replay_to_the_bytes_sent(seed: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp), fsync=False)
        s = _script(store, random.Random(seed))
        assert assert_replays(store, s) == len(s.sent) > 0
