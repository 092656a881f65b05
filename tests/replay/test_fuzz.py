"""Fuzzing exact replay: 10,000 mutated logs. Replay verifies (and then prints exactly the request
that was sent) or refuses with one of the named errors; never a traceback, never a wrong request.

Mutations of real recorded logs: truncated, bytes flipped, lines deleted, duplicated, reordered,
seqs changed, fields removed (anywhere in a line, envelope or payload), and a request's recorded
start point replaced by a wrong one (which replay must survive: it falls back to the whole
prefix). Half the mutants keep the original's index.bin, now stale, so the log's own index checks
are exercised as well. Each mutant is checked with ``verify_all`` (every request),
``replay_request`` of one request (the start-point seek path), and every 50th through the CLI
(exit code, stdout only on success, a refusal one line on stderr); the transcript must read every
mutant without an error. The counts per outcome are printed.
"""

from __future__ import annotations

import random
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from nodwyn.errors import (
    CorruptLogError,
    DigestMismatchError,
    LegacyRequestError,
    NodwynError,
    NotFoundError,
    UnknownRecipeError,
)
from nodwyn.log import Store
from nodwyn.replay.exact import replay_request, verify_all
from nodwyn.replay.tolerant import tolerant_events
from nodwyn.replay.transcript import transcript_lines
from nodwyn.testing import ORIGIN, SessionBuilder, recipe
from nodwyn.values.content import ThinkingBlock
from nodwyn.values.events import CtxOpen, GatePlan, ResultFold
from nodwyn.window import TurnOptions

from .invoke import run

MUTANTS = 10_000
NAMED = (DigestMismatchError, LegacyRequestError, UnknownRecipeError, CorruptLogError, NotFoundError)


def _sessions(store: Store) -> list[SessionBuilder]:
    a = SessionBuilder(store=store, recipe=recipe(19))
    a.turn("read a", [[("fs-read", '{"path":"a"}', "alpha\n" * 5)]], "a is alpha")
    a.turn("two calls", [[("shell", '{"cmd":"ls"}', "x y"), ("fs-read", '{"path":"x"}', "ex")]], "ok")
    a.close()

    b = SessionBuilder(
        store=store, recipe=recipe(16, high_water=700, low_water=300, ceiling=1_000, max_result_tokens=120)
    )
    for i in range(4):
        b.turn(f"job {i}", [[("shell", f'{{"cmd":"j{i}"}}', f"out {i} " + "z" * 300)]], f"job {i} ok")
    b.close()

    c = SessionBuilder(store=store, recipe=recipe(18))
    c.user(
        "plan",
        images=[{"digest": "sha256:" + "ab" * 32, "media_type": "image/png", "width": 64, "height": 64}],
    )
    p = c.request(turn=TurnOptions(no_tools=True), withheld={"sha256:" + "ab" * 32: "no images"})
    c.reply(p, "plan: read", thinking="think")
    c.add(GatePlan(text="1. read"))
    q = c.request()
    blk = ThinkingBlock(type="thinking", origin=ORIGIN, data="sig", text="t", position=0)
    _, calls = c.reply(q, calls=[("fs-read", '{"path":"f"}')], blocks=[blk])
    r = c.result(calls[0], "file body " * 10)
    c.add(ResultFold(target=r.seq, text="[folded]"))
    c.add(CtxOpen(id="n1", kind="narrow", lasting=True, system="Go on."))
    c.turn("after compaction", [[("shell", '{"cmd":"t"}', "t")]], "fine", ctx="n1")
    c.close()
    return [a, b, c]


def _dicts(value: Any, out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        out.append(value)
        for v in value.values():
            _dicts(v, out)
    elif isinstance(value, list):
        for v in value:
            _dicts(v, out)
    return out


def _mutate(raw: bytes, rng: random.Random) -> tuple[str, bytes]:
    lines = raw.splitlines(keepends=True)
    kind = rng.choice(["truncate", "flip", "delete", "duplicate", "reorder", "seq", "field", "hint"])
    if kind == "truncate":
        return kind, raw[: rng.randrange(len(raw))]
    if kind == "flip":
        buf = bytearray(raw)
        for _ in range(rng.randint(1, 3)):
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        return kind, bytes(buf)
    if kind == "hint":  # a wrong start point: replay must fall back and still verify
        reqs = [k for k, line in enumerate(lines) if b'"kind":"llm.req"' in line]
        i = rng.choice(reqs)
        obj = orjson.loads(lines[i])
        s = rng.randint(1, obj["seq"])
        keep = sorted(rng.sample(range(1, s), min(s - 1, rng.randint(0, 3))))
        obj["data"]["start"] = {"seq": s, "keep": keep}
        lines[i] = orjson.dumps(obj) + b"\n"
        return kind, b"".join(lines)
    i = rng.randrange(len(lines))
    if kind == "delete":
        del lines[i]
    elif kind == "duplicate":
        lines.insert(i, lines[i])
    elif kind == "reorder":
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "seq":
        obj = orjson.loads(lines[i])
        obj["seq"] = rng.choice([obj["seq"] + rng.choice([-2, -1, 1, 2, 100]), 0, -1, str(obj["seq"])])
        lines[i] = orjson.dumps(obj) + b"\n"
    else:
        obj = orjson.loads(lines[i])
        target = rng.choice(_dicts(obj, []))
        if target:
            del target[rng.choice(sorted(target))]
        lines[i] = orjson.dumps(obj) + b"\n"
    return kind, b"".join(lines)


def _outcome(exc: BaseException | None) -> str:
    return "verified" if exc is None else type(exc).__name__


@pytest.mark.slow
def test_fuzzed_logs_verify_or_refuse_by_name(
    tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    src = Store(tmp_path / "src", fsync=False)
    bases = _sessions(src)
    raws = [(src.sessions / s.id / "log.jsonl").read_bytes() for s in bases]
    indexes = [(src.sessions / s.id / "index.bin").read_bytes() for s in bases]
    store = Store(tmp_path / "fuzz", fsync=False)
    rng = random.Random(20261129)
    outcomes: Counter[str] = Counter()
    by_kind: Counter[tuple[str, str]] = Counter()
    failures: list[str] = []
    folders: dict[int, Path] = {}
    cli_runs = 0
    for n in range(MUTANTS):
        b = rng.randrange(len(bases))
        base = bases[b]
        folder = folders.get(b)
        if folder is None:
            folder = store.sessions / base.id
            folder.mkdir(parents=True)
            folders[b] = folder
        kind, mutant = _mutate(raws[b], rng)
        (folder / "log.jsonl").write_bytes(mutant)
        if rng.random() < 0.5:
            (folder / "index.bin").write_bytes(indexes[b])
        else:
            (folder / "index.bin").unlink(missing_ok=True)
        target = rng.choice(sorted(base.sent))
        try:
            with store.open(base.id) as log:
                shown = list(transcript_lines(tolerant_events(log)))  # the transcript reads any log
                if not shown:
                    failures.append(f"#{n} {kind}: the transcript showed nothing")
                worst: BaseException | None = None
                for v in verify_all(log):
                    if v.error is None:
                        assert v.replayed is not None
                        if v.replayed.canonical != base.sent.get(v.seq):
                            failures.append(
                                f"#{n} {kind}: verify_all verified a wrong request at seq {v.seq}"
                            )
                    elif not isinstance(v.error, NAMED):
                        failures.append(f"#{n} {kind}: unnamed refusal {v.error!r}")
                    elif worst is None:
                        worst = v.error
                try:
                    got = replay_request(log, target)
                    if got.canonical != base.sent[target]:
                        failures.append(f"#{n} {kind}: replay_request verified a wrong request at {target}")
                    outcome = _outcome(worst)
                except NAMED as exc:
                    outcome = _outcome(exc)
        except NAMED as exc:  # refused on open (e.g. a log whose index cannot be rebuilt)
            outcome = _outcome(exc)
        except NodwynError as exc:
            failures.append(f"#{n} {kind}: refusal of no named kind: {exc!r}")
            continue
        except Exception:
            failures.append(f"#{n} {kind}: traceback\n{traceback.format_exc()}")
            continue
        if kind == "hint" and outcome != "verified":
            failures.append(f"#{n} {kind}: a wrong start point alone made replay refuse: {outcome}")
        outcomes[outcome] += 1
        by_kind[(kind, outcome)] += 1
        if n % 50 == 0:
            cli_runs += 1
            capfdbinary.readouterr()
            code, out, err = run(store, capfdbinary, "replay", base.id, "--window", str(target))
            if code == 0 and out != base.sent[target]:
                failures.append(f"#{n} {kind}: the CLI printed a wrong request with exit 0")
            if code not in (0, 3, 5, 6, 7, 8):
                failures.append(f"#{n} {kind}: the CLI exited {code}")
            if code != 0 and out:
                failures.append(f"#{n} {kind}: the CLI printed to stdout on a refusal")
            if code != 0 and not (err.startswith(b"nodwyn: ") and err.count(b"\n") == 1):
                failures.append(f"#{n} {kind}: the CLI refusal is not one line on stderr: {err!r}")
    with capfdbinary.disabled():
        print(f"\nreplay fuzz: {MUTANTS} mutated logs, outcomes (worst of verify_all + replay_request):")
        for name, count in outcomes.most_common():
            print(f"  {name:<22} {count:>6}")
        kinds = sorted({k for k, _ in by_kind})
        print(
            "  by mutation: "
            + "; ".join(
                f"{k}: " + ", ".join(f"{o} {c}" for (kk, o), c in sorted(by_kind.items()) if kk == k)
                for k in kinds
            )
        )
        print(f"  CLI runs: {cli_runs}; failures: {len(failures)}")
    assert not failures, "\n".join(failures[:10])
    assert sum(outcomes.values()) == MUTANTS
    assert (
        outcomes["verified"] > 0 and outcomes["CorruptLogError"] > 0 and outcomes["DigestMismatchError"] > 0
    )
