"""The session store on a real disk: append, read by range, the index, torn tails, corruption."""

from __future__ import annotations

import os
import random
import re
import string
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from nodwyn.errors import CanonicalError, CorruptLogError, NodwynError, NotFoundError
from nodwyn.log import SessionLog, Store
from nodwyn.log.index import HEADER, MAGIC
from nodwyn.values.events import Event

TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "data")


def _fill(log: SessionLog, n: int) -> list[Event]:
    return [log.append_raw("note", {"text": f"event {i} " + "x" * (i % 7) * 50, "i": i}) for i in range(n)]


def _lines(log_path: Path) -> list[bytes]:
    return (log_path / "log.jsonl").read_bytes().splitlines(keepends=True)


def test_create_makes_a_session_folder_with_an_id_and_files(store: Store) -> None:
    with store.create(now=datetime(2026, 11, 29, 16, 7, 29, tzinfo=UTC)) as log:
        assert re.fullmatch(r"20261129T160729Z-[0-9a-f]{8}", log.id)
        assert log.path == store.root / "sessions" / log.id
        assert (log.path / "log.jsonl").read_bytes() == b""
        assert (log.path / "index.bin").read_bytes() == MAGIC
        assert (log.path / "lock").read_text().strip() == str(os.getpid())
        assert log.last_seq == 0
        assert list(log.read()) == []


def test_append_assigns_seq_time_and_writes_one_line_per_event(store: Store) -> None:
    with store.create() as log:
        events = _fill(log, 25)
        assert [e.seq for e in events] == list(range(1, 26))
        assert all(TIME.fullmatch(e.t) for e in events)
        assert [e.t for e in events] == sorted(e.t for e in events)
        lines = _lines(log.path)
    assert len(lines) == 25
    first = orjson.loads(lines[0])
    assert list(first) == ["seq", "t", "kind", "ctx", "data"]
    assert first == {"seq": 1, "t": events[0].t, "kind": "note", "ctx": "main", "data": events[0].data}
    assert lines[0].startswith(b'{"seq":1,"t":')


def test_append_returns_the_event_as_read_back(store: Store) -> None:
    with store.create() as log:
        data = {"tuple": (1, 2), "nested": {"u": "é\u2028\x00"}, "n": None, "f": 1.5}
        returned = log.append_raw("note", data, ctx="sub-1")
        sid = log.id
    with store.open(sid) as reader:
        (read,) = list(reader.read())
    assert returned == read
    assert read.data == {"tuple": [1, 2], "nested": {"u": "é\u2028\x00"}, "n": None, "f": 1.5}
    assert read.ctx == "sub-1"


def test_read_ranges_are_inclusive_and_clipped(store: Store) -> None:
    with store.create() as log:
        written = _fill(log, 40)
        assert list(log.read(10, 12)) == written[9:12]
        assert list(log.read(38)) == written[37:]
        assert list(log.read(40, 100)) == written[39:]
        assert list(log.read(41)) == []
        assert list(log.read(5, 4)) == []
        assert list(log.read(0, 2)) == written[:2]
        sid = log.id
    with store.open(sid) as reader:
        assert list(reader.read()) == written
        assert reader.last_seq == 40


def test_read_from_a_seq_reads_only_that_part_of_the_log(store: Store) -> None:
    """A seek: damage every line before seq 30 and reading from 30 still works (nothing else is read)."""
    with store.create() as log:
        written = _fill(log, 40)
        sid, path = log.id, log.path
    raw = bytearray((path / "log.jsonl").read_bytes())
    start_30 = len(b"".join(_lines(path)[:29]))
    for i in range(start_30 - 1):
        if raw[i] != ord("\n"):
            raw[i] = ord("#")
    (path / "log.jsonl").write_bytes(bytes(raw))
    with store.open(sid) as reader:
        assert list(reader.read(30)) == written[29:]
        with pytest.raises(CorruptLogError, match=rf"session {sid}: the line at byte 0 .*seq 1"):
            list(reader.read(1, 1))


def test_reader_sees_the_writers_new_events(store: Store) -> None:
    with store.create() as log:
        _fill(log, 3)
        with store.open(log.id) as reader:
            assert reader.last_seq == 3
            log.append_raw("note", {"text": "more"})
            assert reader.last_seq == 4
            assert [e.seq for e in reader.read(3)] == [3, 4]


def test_unknown_session_is_not_found(store: Store) -> None:
    with pytest.raises(NotFoundError, match="no session 20260101T000000Z-00000000"):
        store.open("20260101T000000Z-00000000")
    with pytest.raises(NotFoundError, match="not a session id"):
        store.open("../etc")
    assert store.list() == []


@pytest.mark.parametrize(
    ("kind", "ctx", "data", "message"),
    [
        ("Note", "main", {}, "dotted lowercase"),
        ("note.", "main", {}, "dotted lowercase"),
        ("note", "", {}, "context id"),
        ("note", "a b", {}, "context id"),
        ("note", "main", {1: "x"}, "not JSON"),
        ("note", "main", {"x": object()}, "not JSON"),
        ("note", "main", {"_redaction": 1}, "_redaction"),
        ("note", "main", [1], "JSON object"),
    ],
)
def test_bad_appends_are_refused_and_write_nothing(
    store: Store, kind: str, ctx: str, data: object, message: str
) -> None:
    with store.create() as log:
        log.append_raw("note", {"text": "before"})
        size = (log.path / "log.jsonl").stat().st_size
        with pytest.raises(CanonicalError, match=message):
            log.append_raw(kind, data, ctx=ctx)  # type: ignore[arg-type]  # data that is no JSON object, on purpose
        assert (log.path / "log.jsonl").stat().st_size == size
        assert log.append_raw("note", {"text": "after"}).seq == 2


def test_a_reader_cannot_append(store: Store) -> None:
    with store.create() as log:
        sid = log.id
    with store.open(sid) as reader, pytest.raises(NodwynError, match="not open for writing"):
        reader.append_raw("note", {})


def test_append_redacts_and_records_the_report(store: Store) -> None:
    key = "sk-proj-" + "Ab3" * 20
    rng = random.Random(7)
    blob = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(64))
    with store.create() as log:
        event = log.append_raw("note", {"text": f"key {key} blob {blob}", "plain": "hello"})
        plain = log.append_raw("note", {"text": "nothing to see"})
        raw = (log.path / "log.jsonl").read_bytes()
    assert key.encode() not in raw
    assert event.data["text"] == f"key [redacted:openai-key] blob {blob}"
    assert event.data["_redaction"] == {"replaced": {"openai-key": 1}, "unknown_entropy": 1}
    assert "_redaction" not in plain.data


def test_list_reports_each_session(store: Store) -> None:
    with store.create(now=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) as empty:
        empty_id = empty.id
    with store.create() as log:
        written = _fill(log, 7)
        full_id = log.id
        size = (log.path / "log.jsonl").stat().st_size
    infos = {i.id: i for i in store.list()}
    assert infos[full_id].events == 7
    assert infos[full_id].start == written[0].t
    assert infos[full_id].last == written[-1].t
    assert infos[full_id].size == size
    assert infos[empty_id].events == 0
    assert infos[empty_id].start == "2026-01-02T03:04:05.000000Z"
    assert infos[empty_id].last is None
    assert [i.id for i in store.list()] == sorted(infos)


# -- torn tails ----------------------------------------------------------------------------------


def test_torn_tail_is_not_an_event_for_readers_and_is_cut_by_the_next_writer(store: Store) -> None:
    with store.create() as log:
        written = _fill(log, 5)
        sid, path = log.id, log.path
    whole = (path / "log.jsonl").stat().st_size
    torn = b'{"seq":6,"t":"2026-11-29T16:07:29.123456Z","kind":"no'
    with open(path / "log.jsonl", "ab") as fh:
        fh.write(torn)
    with store.open(sid) as reader:
        assert reader.last_seq == 5
        assert reader.torn_bytes == len(torn)
        assert list(reader.read()) == written
    info = store.info(sid)
    assert (info.events, info.torn_bytes) == (5, len(torn))
    with store.open(sid, write=True) as writer:
        assert writer.repaired is not None
        assert writer.repaired.seq == 6
        assert writer.repaired.kind == "log.repaired"
        assert writer.repaired.data == {"truncated_bytes": len(torn), "offset": whole}
        assert writer.append_raw("note", {"text": "next"}).seq == 7
    with store.open(sid) as reader:
        assert [e.kind for e in reader.read(5)] == ["note", "log.repaired", "note"]
        assert reader.torn_bytes == 0


def test_a_clean_log_is_not_repaired(store: Store) -> None:
    with store.create() as log:
        _fill(log, 3)
        sid = log.id
    with store.open(sid, write=True) as writer:
        assert writer.repaired is None
        assert writer.last_seq == 3


def test_malformed_whole_line_is_corruption_naming_session_seq_and_offset(store: Store) -> None:
    with store.create() as log:
        _fill(log, 4)
        sid, path = log.id, log.path
    lines = _lines(path)
    offset = len(b"".join(lines[:2]))
    lines[2] = b'{"seq":3,"t":"x","kind":"note","ctx":"main","data":{"oops"}\n'
    (path / "log.jsonl").write_bytes(b"".join(lines))
    with store.open(sid) as reader:
        assert [e.seq for e in reader.read(1, 2)] == [1, 2]
        with pytest.raises(
            CorruptLogError, match=rf"session {sid}: the line at byte {offset} \(seq 3\) is not JSON"
        ):
            list(reader.read())
    assert store.info(sid).error is None  # listing reads the first and last events only
    last_offset = len(b"".join(lines[:3]))
    lines[3] = b"{not json at all}\n"
    (path / "log.jsonl").write_bytes(b"".join(lines))
    (path / "index.bin").unlink()
    assert f"the line at byte {last_offset} should start with" in (store.info(sid).error or "")


@pytest.mark.parametrize(
    ("kind", "ctx"), [("note\n#3 forged", "main"), ("Note", "main"), ("note", "main\nx"), ("note", "")]
)
def test_a_kind_or_context_the_writer_never_writes_is_corruption(store: Store, kind: str, ctx: str) -> None:
    with store.create() as log:
        _fill(log, 3)
        sid, path = log.id, log.path
    lines = _lines(path)
    event = orjson.loads(lines[1])
    event["kind"], event["ctx"] = kind, ctx
    lines[1] = orjson.dumps(event) + b"\n"
    (path / "log.jsonl").write_bytes(b"".join(lines))
    with store.open(sid) as reader, pytest.raises(CorruptLogError) as exc:
        list(reader.read())
    message = str(exc.value)
    assert f"the line at byte {len(lines[0])} (seq 2) has kind {kind!r} and context id {ctx!r}" in message
    assert "\n" not in message


def test_out_of_sequence_line_is_corruption(store: Store) -> None:
    with store.create() as log:
        _fill(log, 3)
        sid, path = log.id, log.path
    lines = _lines(path)
    lines[1] = lines[1].replace(b'{"seq":2,', b'{"seq":9,', 1)
    (path / "log.jsonl").write_bytes(b"".join(lines))
    (path / "index.bin").unlink()
    with store.open(sid) as reader, pytest.raises(CorruptLogError, match=r"seq 2"):
        list(reader.read())
    with pytest.raises(CorruptLogError, match=rf"session {sid}"):
        store.open(sid, write=True)


# -- the index -----------------------------------------------------------------------------------


def _index_entries(path: Path) -> list[int]:
    raw = (path / "index.bin").read_bytes()
    assert raw[:HEADER] == MAGIC
    return [int.from_bytes(raw[i : i + 8], "little") for i in range(HEADER, len(raw), 8)]


def test_index_holds_the_end_offset_of_each_line(store: Store) -> None:
    with store.create() as log:
        _fill(log, 10)
        path = log.path
    ends, pos = [], 0
    for line in _lines(path):
        pos += len(line)
        ends.append(pos)
    assert _index_entries(path) == ends


@pytest.mark.parametrize(
    "damage",
    ["missing", "garbage", "empty", "short", "half-entry", "wrong-offsets", "too-many", "zeroed-middle"],
)
def test_a_bad_index_is_rebuilt_from_the_log(store: Store, damage: str) -> None:
    with store.create() as log:
        written = _fill(log, 30)
        sid, path = log.id, log.path
    good = (path / "index.bin").read_bytes()
    index = path / "index.bin"
    if damage == "missing":
        index.unlink()
    elif damage == "garbage":
        index.write_bytes(b"not an index at all")
    elif damage == "empty":
        index.write_bytes(b"")
    elif damage == "short":
        index.write_bytes(good[: HEADER + 8 * 12])  # lags: caught up from the log
    elif damage == "half-entry":
        index.write_bytes(good[:-3])
    elif damage == "wrong-offsets":
        entries = bytearray(good)
        entries[HEADER + 8 * 29 : HEADER + 8 * 30] = (12345).to_bytes(8, "little")
        index.write_bytes(bytes(entries))
    elif damage == "too-many":
        index.write_bytes(good + (10**6).to_bytes(8, "little"))
    elif damage == "zeroed-middle":  # the tail checks out; the middle is found wrong when read
        entries = bytearray(good)
        entries[HEADER + 8 * 10 : HEADER + 8 * 20] = bytes(80)
        index.write_bytes(bytes(entries))
    damaged = index.read_bytes() if index.exists() else None
    with store.open(sid) as reader:
        assert reader.last_seq == 30
        assert list(reader.read()) == written
        assert list(reader.read(15, 16)) == written[14:16]
    assert (index.read_bytes() if index.exists() else None) == damaged  # a reader writes nothing
    with store.open(sid, write=True) as writer:
        assert writer.repaired is None
        assert list(writer.read(12, 13)) == written[11:13]
        writer.append_raw("note", {"text": "after"})
    assert _index_entries(path)[:30] == [
        int.from_bytes(good[i : i + 8], "little") for i in range(HEADER, len(good), 8)
    ]
    assert len(_index_entries(path)) == 31


def test_writer_rewrites_an_index_found_wrong_while_reading(store: Store) -> None:
    with store.create() as log:
        written = _fill(log, 20)
        sid, path = log.id, log.path
    good = (path / "index.bin").read_bytes()
    entries = bytearray(good)
    entries[HEADER + 8 * 3 : HEADER + 8 * 5] = bytes(16)
    (path / "index.bin").write_bytes(bytes(entries))
    with store.open(sid, write=True) as writer:
        assert list(writer.read()) == written
    assert (path / "index.bin").read_bytes() == good


# -- attachments ---------------------------------------------------------------------------------


def test_attachments_are_content_addressed_and_verified(store: Store) -> None:
    with store.create() as log:
        data = os.urandom(5000)
        digest = log.attachments.put(data)
        assert digest == __import__("hashlib").sha256(data).hexdigest()
        assert log.attachments.put(data) == digest
        assert log.attachments.has(digest)
        assert log.attachments.get(digest) == data
        assert not log.attachments.has("0" * 64)
        assert not log.attachments.has("../log.jsonl")
        with pytest.raises(NotFoundError, match="no attachment"):
            log.attachments.get("0" * 64)
        with pytest.raises(NotFoundError, match="not an attachment digest"):
            log.attachments.get("../log.jsonl")
        stored = log.path / "attachments" / digest
        assert [p.name for p in stored.parent.iterdir()] == [digest]  # no temporary left behind
        stored.write_bytes(data[:-1] + b"!")
        with pytest.raises(CorruptLogError, match=f"attachment .*{digest}"):
            log.attachments.get(digest)


def test_a_reader_follows_an_index_the_writer_rewrote(store: Store) -> None:
    with store.create() as log:
        written = _fill(log, 10)
        sid, path = log.id, log.path
    with store.open(sid) as reader:
        assert reader.last_seq == 10
        (path / "index.bin").write_bytes(b"broken")  # damaged under the reader
        with store.open(sid, write=True) as writer:  # rewrites index.bin (atomic rename)
            written += _fill(writer, 100)
        old_inode = os.fstat(reader._idx.fd).st_ino if reader._idx else None
        assert list(reader.read()) == written
        assert reader._idx is not None and reader._idx.fd >= 0
        assert os.fstat(reader._idx.fd).st_ino == os.stat(path / "index.bin").st_ino != old_inode


def test_reads_cross_index_batches_and_huge_lines(tmp_path: Path) -> None:
    store = Store(tmp_path, fsync=False)
    with store.create() as log:
        written = [log.append_raw("note", {"i": i}) for i in range(5000)]
        written.append(log.append_raw("tool.result", {"text": "h" * (5 << 20)}))  # one line over 4 MB
        written += [log.append_raw("note", {"i": i}) for i in range(3)]
        sid = log.id
    with store.open(sid) as reader:
        assert list(reader.read()) == written
        assert list(reader.read(4090, 4200)) == written[4089:4200]
        assert list(reader.read(5000, 5002)) == written[4999:5002]


def test_a_log_dropped_without_close_leaks_no_descriptor(store: Store) -> None:
    with store.create() as log:
        log.append_raw("note", {})
        sid = log.id
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(300):
        assert len(list(store.open(sid).read())) == 1
    assert len(os.listdir("/proc/self/fd")) <= before + 2
    writer = store.open(sid, write=True)
    del writer  # the lock goes with it
    with store.open(sid, write=True) as again:
        assert again.last_seq == 1


def test_offset_of_names_where_each_line_starts(store: Store) -> None:
    with store.create() as log:
        _fill(log, 6)
        starts, pos = [], 0
        for line in _lines(log.path):
            starts.append(pos)
            pos += len(line)
        assert [log.offset_of(s) for s in range(1, 7)] == starts
        assert log.offset_of(0) is None and log.offset_of(7) is None


def test_sessions_started_in_one_second_list_in_start_order(store: Store) -> None:
    """An id names its start to the second; ``latest`` must still be the one started last
    (`nodwyn run` twice in a second, then `-c`), whatever the random suffixes say."""
    second = datetime(2026, 11, 29, 16, 7, 29, tzinfo=UTC)
    made = []
    for i in range(8):
        with store.create(now=second) as log:
            log.append_raw("note", {"i": i})
            made.append(log.id)
    with store.create(now=second) as unstarted:
        pass
    assert store.ids() == [*made, unstarted.id]
    assert store.resolve("latest") == unstarted.id
    assert [info.id for info in store.list()] == store.ids()
