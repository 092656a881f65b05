"""Dispatch over event kinds is exhaustive (ADR 0415): every ``match`` over a decoded payload ends
in ``assert_never`` over ``values.events.AnyPayload``, so a new kind is a type error in each
dispatch that has no case for it (``mypy --strict``), and every kind of a real session goes
through every dispatch without reaching ``assert_never`` at run time.

The samples are the events of the fixture logs (what earlier releases wrote) and of an imported
session (``llm.seen``, ``import.view``); a new kind needs a sample here before this passes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import orjson
import pytest

from nodwyn.agent.state import LoopState
from nodwyn.console.views import event_json
from nodwyn.export.markdown import session_markdown
from nodwyn.export.otel import spans
from nodwyn.imports import conversation, find, load, source_of, write
from nodwyn.log import Store
from nodwyn.replay.transcript import LABELS, in_words, render_event
from nodwyn.stats.totals import Aggregator
from nodwyn.values.events import KINDS, PAYLOADS, AnyPayload, Bookkeeping, Event, Observed, decode
from nodwyn.window.entries import _entry_of

DATA = Path(__file__).resolve().parent / "data"
FIXTURES = sorted((DATA / "fixture_logs").rglob("sessions/*/log.jsonl"))
OPENHANDS = DATA / "imports" / "openhands-v1" / "3880c06039224ff586eff2db1186474e"


def _fixture_events() -> Iterator[Event]:
    for path in FIXTURES:
        for line in path.read_bytes().splitlines():
            raw = orjson.loads(line)
            yield Event(seq=raw["seq"], t=raw["t"], kind=raw["kind"], ctx=raw["ctx"], data=raw["data"])


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, str]:
    store = Store(tmp_path_factory.mktemp("imported"), fsync=False)
    (found,) = find(OPENHANDS)
    run = load(found)
    return store, write(store, run, source_of(found, run))


@pytest.fixture(scope="module")
def samples(imported: tuple[Store, str]) -> dict[str, Event]:
    """One event of each kind: the first of it in the fixture logs, then in the imported session."""
    store, sid = imported
    with store.open(sid) as log:
        events = [*_fixture_events(), *log.read()]
    out: dict[str, Event] = {}
    for ev in events:
        out.setdefault(ev.kind, ev)
    return out


def test_the_union_is_every_kind_and_the_labels_name_each() -> None:
    assert {cls.KIND for cls in get_args(AnyPayload)} == KINDS == set(PAYLOADS)
    assert set(LABELS) == KINDS  # the transcript's and the export's word for each kind


def test_the_groups_a_dispatch_may_name_are_these_kinds() -> None:
    """ADR 0480: a kind joins a group on purpose; every dispatch naming the group then handles it."""
    members = {
        group: {c.KIND for c in get_args(AnyPayload) if issubclass(c, group)}
        for group in (Bookkeeping, Observed)
    }
    assert members[Bookkeeping] == {
        "result.fold",
        "summary.add",
        "summary.revoke",
        "ctx.open",
        "ctx.close",
        "ctx.widen",
        "model.switch",
        "log.repaired",
    }
    assert members[Observed] == {"llm.seen", "import.view"}


def test_every_kind_has_a_sample(samples: dict[str, Event]) -> None:
    assert set(samples) == KINDS, f"no sample event of {sorted(KINDS - set(samples))}: add one here"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_dispatch_takes_every_kind(samples: dict[str, Event], kind: str) -> None:
    ev = samples[kind]
    assert kind == type(decode(ev)).KIND
    # a dispatch missing this kind would raise AssertionError from assert_never here
    assert render_event(ev)[0].startswith(f"#{ev.seq}")
    row = event_json(ev)
    assert row["kind"] == kind
    assert ("sentence" in row) is (in_words(ev) is not None)  # the console words what the transcript does
    entry = _entry_of(ev)
    assert entry is None or entry.seq == ev.seq
    LoopState().follow(ev)
    totals = Aggregator()
    totals.feed(ev)
    assert totals.fed == 1
    list(session_markdown([ev], "s"))
    spans([ev], "s")


def test_an_imported_session_reads_back_through_its_dispatch(imported: tuple[Store, str]) -> None:
    store, sid = imported
    with store.open(sid) as log:
        run = conversation(log)
    assert run.messages and run.requests


@pytest.mark.slow
def test_mypy_strict_refuses_a_dispatch_that_misses_a_kind(tmp_path: Path) -> None:
    """What a new kind does to a dispatch written before it: the kind is a case that is missing."""
    from mypy import api

    kinds = [cls.__name__ for cls in get_args(AnyPayload) if cls.__name__ != "ImportView"]
    code = tmp_path / "dispatch.py"
    code.write_text(
        "from typing import assert_never\n"
        f"from nodwyn.values.events import AnyPayload, {', '.join(kinds)}\n\n\n"
        "def word(p: AnyPayload) -> str:\n"
        "    match p:\n"
        f"        case {' | '.join(k + '()' for k in kinds)}:\n"
        "            return p.KIND\n"
        "        case _:\n"
        "            assert_never(p)\n"
    )
    out, _, status = api.run(
        ["--strict", "--cache-dir", str(tmp_path / "cache"), "--config-file", "", str(code)]
    )
    assert status == 1, out
    assert 'Argument 1 to "assert_never" has incompatible type "ImportView"' in out
