"""Logs an earlier release wrote still replay byte for byte.

Each folder of ``tests/data/fixture_logs`` holds one session as the store laid it out
(``KIND/sessions/ID/``), written once by ``make.py`` and never regenerated, with its goldens:
``golden.json`` (per request: seq, context, recorded digest, recipe version and the SHA-256 of the
canonical bytes replay rebuilds) and ``transcript.txt`` (``nodwyn replay SESSION``). Each is copied
to a fresh store and replayed with ``verify_all`` and ``replay_request``; any change to a digest,
to a canonical byte or to the transcript fails here.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from nodwyn.cli import cli
from nodwyn.log import Store
from nodwyn.replay.exact import replay_request, verify_all

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixture_logs"
GOLDEN = "golden.json"
TRANSCRIPT = "transcript.txt"
KINDS = sorted(p.name for p in FIXTURES.iterdir() if (p / "sessions").is_dir())


def snapshot(root: Path) -> tuple[bytes, str]:
    """The one session under store ``root``, replayed: (golden.json bytes, transcript text).

    Every request must verify (``verify_all``) and replay on its own (``replay_request``) to the
    digest its ``llm.req`` recorded, else this raises."""
    store = Store(root, fsync=False)
    [sid] = store.ids()
    rows: list[dict[str, object]] = []
    with store.open(sid) as log:
        recorded = {e.seq: e for e in log.read(1) if e.kind == "llm.req"}
        verdicts = list(verify_all(log))
        refused = [(v.seq, str(v.error)) for v in verdicts if v.error is not None]
        assert not refused, f"{root.name}: requests verify_all refuses: {refused}"
        assert [v.seq for v in verdicts] == sorted(recorded), f"{root.name}: verify_all missed requests"
        for v in verdicts:
            assert v.replayed is not None
            one = replay_request(log, v.seq)
            req = recorded[v.seq]
            assert one.canonical == v.replayed.canonical, f"{root.name} seq {v.seq}: two replays differ"
            assert one.digest == req.data["digest"] == "sha256:" + hashlib.sha256(one.canonical).hexdigest()
            rows.append(
                {
                    "seq": v.seq,
                    "ctx": v.ctx,
                    "digest": req.data["digest"],
                    "recipe": one.recipe_version,
                    "canonical_sha256": hashlib.sha256(one.canonical).hexdigest(),
                    "canonical_bytes": len(one.canonical),
                }
            )
    golden = orjson.dumps({"session": sid, "requests": rows}, option=orjson.OPT_INDENT_2) + b"\n"
    res = CliRunner().invoke(cli, ["replay", sid, "--root", str(root)])
    assert res.exit_code == 0, f"{root.name}: nodwyn replay exited {res.exit_code}: {res.output}"
    return golden, res.stdout


def test_every_kind_has_goldens_and_a_readme_line() -> None:
    readme = (FIXTURES / "README.md").read_text()
    assert len(KINDS) >= 18
    for kind in KINDS:
        assert (FIXTURES / kind / GOLDEN).is_file() and (FIXTURES / kind / TRANSCRIPT).is_file(), kind
        assert f"`{kind}`" in readme, f"README.md says nothing of fixture {kind}"


@pytest.mark.parametrize("kind", KINDS)
def test_a_fixture_log_replays_byte_for_byte(kind: str, tmp_path: Path) -> None:
    src = FIXTURES / kind
    root = tmp_path / kind
    shutil.copytree(src / "sessions", root / "sessions")
    logs = sorted(root.glob("sessions/*/log.jsonl"))
    before = [p.read_bytes() for p in logs]

    golden, text = snapshot(root)

    want = orjson.loads((src / GOLDEN).read_bytes())
    got = orjson.loads(golden)
    assert got["session"] == want["session"]
    assert len(got["requests"]) == len(want["requests"]) > 0
    for g, w in zip(got["requests"], want["requests"], strict=True):
        assert g == w, f"{kind}: request seq {w['seq']} no longer replays to what it did"
    assert golden == (src / GOLDEN).read_bytes()
    assert text == (src / TRANSCRIPT).read_text(), f"{kind}: `nodwyn replay` shows another transcript"
    assert [p.read_bytes() for p in logs] == before, "replay changed a log"
