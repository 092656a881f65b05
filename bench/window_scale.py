"""Window build cost against history size: a request costs what was appended, not the log.

A synthetic session grows by tool turns (a request, a reply with one call, a ~2 KB result) to
10k, 100k and 1M tokens of history, with water marks above that so nothing is trimmed. At each
size it times, per request, what the agent does for every model turn: ``Recorder.request`` (the
window's build, which renders, encodes the canonical request and digests it, then the ``llm.req``
recorded and fed back) on a window that has been fed the events appended since the previous
request. It reports the median per-request time and its ratio to the
10k case, and, as the contrast, the time to build the same request from the whole log at once
(``build_window``), which grows with the log.

    .venv/bin/python bench/window_scale.py [--requests 30] [--sizes 10000,100000,1000000]
"""

from __future__ import annotations

import argparse
import statistics
import time

from nodwyn.record import Recorder
from nodwyn.testing import MemoryLog
from nodwyn.values.content import Origin, ToolCall
from nodwyn.values.events import Event, LlmResp, Payload, ResultFold, SessionStart, ToolResult, UserMsg
from nodwyn.values.recipe import Recipe, WindowLimits
from nodwyn.values.request import Response, ToolSpec
from nodwyn.window import build_window

ORIGIN = Origin(model="bench-model", server="bench")
TOOLS = tuple(
    ToolSpec(name=n, description=f"The {n} tool.", parameters={"type": "object", "properties": {}})
    for n in ("fs-read", "shell", "edit", "search")
)


class Session:
    def __init__(self) -> None:
        self.log = MemoryLog()
        self.recorder = Recorder(self.log)
        self.window = self.recorder.window
        limits = WindowLimits(
            high_water=4_000_000,
            low_water=2_000_000,
            max_result_tokens=16_384,
            output_reserve=8192,
            ceiling=4_100_000,
        )
        recipe = Recipe(
            version=19,
            system="You are a coding agent. " * 40,
            tools=TOOLS,
            limits=limits,
            context_size=4_200_000,
        )
        self.add(SessionStart(recipe=recipe, model="bench"))
        self.add(UserMsg(text="Fix the failing test in the parser module, then run the suite."))
        self.turns = 0

    @property
    def events(self) -> list[Event]:
        return self.log.events

    def add(self, payload: Payload) -> Event:
        return self.recorder.append(payload)

    def request(self) -> tuple[float, int]:
        """One request as the agent records it (build, digest, ``llm.req``, fed back), timed whole."""
        t0 = time.perf_counter()
        b, _ = self.recorder.request("main", ORIGIN, model="bench")
        elapsed = time.perf_counter() - t0
        return elapsed, b.record.estimate

    def answer(self) -> None:
        n = self.turns
        self.turns += 1
        call = ToolCall(id=f"call_{n}", name="fs-read", arguments=f'{{"path": "src/mod{n % 50}.py"}}')
        text = f"Reading module {n % 50} to check how the parser handles this case. " * 2
        self.add(LlmResp(req=len(self.events), response=Response(text=text, calls=(call,))))
        body = "".join(f"{i:5d}  def function_{n}_{i}(value):  return value * {i}\n" for i in range(40))
        self.add(ToolResult(call_id=call.id, name="fs-read", text=body, error=False))


def grow_to(session: Session, tokens: int) -> None:
    estimate = 0
    while estimate < tokens:
        _, estimate = session.request()
        session.answer()


def measure(session: Session, requests: int) -> list[float]:
    times = []
    for _ in range(requests):
        elapsed, _ = session.request()
        times.append(elapsed)
        session.answer()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=30, help="requests timed at each size")
    parser.add_argument("--sizes", default="10000,100000,1000000", help="history sizes in tokens")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    session = Session()
    rows = []
    for size in sizes:
        grow_to(session, size)
        times = measure(session, args.requests)
        t0 = time.perf_counter()
        build_window(session.events, origin=ORIGIN)
        scratch = time.perf_counter() - t0
        # a request after a fold of an early result: the whole view is rendered again (a move)
        first = next(e.seq for e in session.events if e.kind == "tool.result")
        session.add(ResultFold(target=first, text="[folded]"))
        rerender, _ = session.request()
        session.answer()
        rows.append((size, len(session.events), statistics.median(times), max(times), rerender, scratch))
    base = rows[0][2]
    heads = ("history", "events", "median ms", "max ms", "x 10k", "re-render ms", "from log ms")
    widths = (10, 7, 9, 7, 6, 12, 11)
    print(" ".join(f"{h:>{w}}" for h, w in zip(heads, widths, strict=True)))
    for size, events, median, worst, rerender, scratch in rows:
        cells: tuple[str, ...] = (f"{size:,}", f"{events:,}", f"{median * 1000:.2f}", f"{worst * 1000:.2f}")
        cells += (f"{median / base:.2f}", f"{rerender * 1000:.1f}", f"{scratch * 1000:.1f}")
        print(" ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)))


if __name__ == "__main__":
    main()
