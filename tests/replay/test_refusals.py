"""Exact replay refuses, in one line with its own exit code: a digest mismatch, a legacy request,
an unknown recipe version, a partial or malformed log. It proves the requests it prints."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from nodwyn.cli.replay import _verdict_line
from nodwyn.errors import (
    CorruptLogError,
    DigestMismatchError,
    LegacyRequestError,
    NotFoundError,
    UnknownRecipeError,
)
from nodwyn.log import Store
from nodwyn.replay.exact import Verdict, offset_of, replay_request, verify_all
from nodwyn.testing import SessionBuilder, recipe
from nodwyn.values.events import CtxOpen

from .invoke import run as nodwyn
from .logfile import Line, log_path, read_lines, rewrite, seq_of, write_raw


def _recorded(store: Store) -> SessionBuilder:
    s = SessionBuilder(store=store, recipe=recipe())
    s.turn("read a", [[("fs-read", '{"path":"a"}', "alpha\n")]], "a is alpha")
    s.turn("read b", [[("fs-read", '{"path":"b"}', "beta\n")]], "b is beta")
    s.close()
    return s


def run(store: Store, capfdbinary: pytest.CaptureFixture[bytes], *args: str) -> tuple[int, bytes, str]:
    code, out, err = nodwyn(store, capfdbinary, *args)
    return code, out, err.decode()


def test_window_prints_exactly_the_bytes_sent(
    store: Store, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    s = _recorded(store)
    seq = max(s.sent)
    code, out, err = run(store, capfdbinary, "replay", s.id, "--window", str(seq))
    assert (code, err) == (0, "")
    assert out == s.sent[seq]
    with store.open(s.id) as log:
        recorded = next(log.read(seq, seq)).data["digest"]
    assert "sha256:" + hashlib.sha256(out).hexdigest() == recorded


def test_all_prints_a_line_per_request_and_a_total(
    store: Store, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    s = _recorded(store)
    code, out, _ = run(store, capfdbinary, "replay", s.id, "--all")
    lines = out.decode().splitlines()
    assert code == 0
    assert len(lines) == len(s.sent) + 1
    assert all(" ok " in line for line in lines[:-1])
    assert lines[-1] == f"{len(s.sent)} requests: {len(s.sent)} verified, 0 refused"


def _edit_text(lines: list[Line], seq: int, text: str) -> list[Line]:
    for line in lines:
        if line["seq"] == seq:
            line["data"]["text"] = text
    return lines


@pytest.mark.forges_digests
def test_digest_mismatch_names_both_digests_and_the_first_byte(
    store: Store, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    s = _recorded(store)
    lines = read_lines(store, s.id)
    second_user = seq_of(lines, "user.msg", 1)
    rewrite(store, s.id, lambda ls: _edit_text(ls, second_user, "read c"))
    last = max(s.sent)
    with store.open(s.id) as log, pytest.raises(DigestMismatchError) as exc:
        replay_request(log, last)
    msg = str(exc.value)
    rebuilt = hashlib.sha256(s.sent[last].replace(b"read b", b"read c")).hexdigest()
    assert f"rebuilt sha256:{rebuilt}" in msg
    assert f"recorded sha256:{hashlib.sha256(s.sent[last]).hexdigest()}" in msg
    assert "first difference from the last verified request of context main" in msg and "byte " in msg
    # with the bytes that were sent, the position is exact
    sent_file = store.root / "sent.json"
    sent_file.write_bytes(s.sent[last])
    code, out, err = run(
        store, capfdbinary, "replay", s.id, "--window", str(last), "--expect", str(sent_file)
    )
    pos = next(
        i
        for i, (a, b) in enumerate(
            zip(s.sent[last], s.sent[last].replace(b"read b", b"read c"), strict=False)
        )
        if a != b
    )
    assert code == 6 and out == b""
    assert len(err.strip().splitlines()) == 1 and f"(--expect): byte {pos} ($.messages[" in err


def test_legacy_request_without_digest(store: Store, capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    s = _recorded(store)
    last = max(s.sent)

    def drop(lines: list[Line]) -> list[Line]:
        for line in lines:
            if line["seq"] == last:
                del line["data"]["digest"]
        return lines

    rewrite(store, s.id, drop)
    code, out, err = run(store, capfdbinary, "replay", s.id, "--window", str(last))
    assert code == 7 and out == b"" and "legacy" in err and len(err.strip().splitlines()) == 1
    # the other requests still verify; --all reports the legacy one and exits with its code
    code, out, _ = run(store, capfdbinary, "replay", s.id, "--all")
    assert code == 7 and out.decode().splitlines()[-1].endswith("verified, 1 refused")


def test_legacy_session_without_recipe(store: Store) -> None:
    s = _recorded(store)

    def drop(lines: list[Line]) -> list[Line]:
        del lines[0]["data"]["recipe"]
        return lines

    rewrite(store, s.id, drop)
    with store.open(s.id) as log, pytest.raises(LegacyRequestError, match="records no recipe"):
        replay_request(log, min(s.sent))


def test_unknown_recipe_version(store: Store, capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    s = _recorded(store)

    def v13(lines: list[Line]) -> list[Line]:
        lines[0]["data"]["recipe"]["version"] = "window-v13"
        return lines

    rewrite(store, s.id, v13)
    with store.open(s.id) as log, pytest.raises(UnknownRecipeError, match="window-v13"):
        replay_request(log, min(s.sent))
    code, _, err = run(store, capfdbinary, "replay", s.id, "--window", str(min(s.sent)))
    assert code == 8 and len(err.strip().splitlines()) == 1
    assert f"session {s.id} seq 1" in err, "the refusal names where the unknown version is recorded"


def test_malformed_line_names_seq_and_offset(store: Store, capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    s = _recorded(store)
    raw = log_path(store, s.id).read_bytes()
    lines = raw.splitlines(keepends=True)
    offset = sum(len(line) for line in lines[:3])
    lines[3] = lines[3][:-2] + b"\n"  # the closing brace gone: not JSON
    write_raw(store, s.id, b"".join(lines))
    code, out, err = run(store, capfdbinary, "replay", s.id, "--window", str(max(s.sent)))
    assert code == 5 and out == b""
    assert f"byte {offset}" in err and "seq 4" in err and len(err.strip().splitlines()) == 1


def test_payload_of_the_wrong_shape_is_refused_with_its_place(store: Store) -> None:
    s = _recorded(store)
    lines = read_lines(store, s.id)
    res = seq_of(lines, "tool.result")

    def bad(ls: list[Line]) -> list[Line]:
        for line in ls:
            if line["seq"] == res:
                line["data"]["error"] = "no"
        return ls

    rewrite(store, s.id, bad)
    raw = log_path(store, s.id).read_bytes()
    offset = sum(len(line) for line in raw.splitlines(keepends=True)[: res - 1])
    with store.open(s.id) as log, pytest.raises(CorruptLogError) as exc:
        replay_request(log, max(s.sent))
    assert f"seq {res} (byte offset {offset})" in str(exc.value) and "error" in str(exc.value)


def test_partial_log_is_refused_by_all(store: Store, capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    s = _recorded(store)
    with open(log_path(store, s.id), "ab") as fh:
        fh.write(b'{"seq":99,"t":"2026')
    code, out, _ = run(store, capfdbinary, "replay", s.id, "--all")
    assert code == 5 and "partial log" in out.decode()


def test_window_refuses_a_torn_tail_after_seq(
    store: Store, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    """Exact CLI replay refuses a partial log, for --window SEQ too,
    though the torn bytes come after SEQ; it prints nothing."""
    s = _recorded(store)
    first = min(s.sent)
    with open(log_path(store, s.id), "ab") as fh:
        fh.write(b'{"seq":99,"t":"2026')
    code, out, err = run(store, capfdbinary, "replay", s.id, "--window", str(first))
    assert code == 5 and out == b""
    assert "partial log" in err and err.count("\n") == 1
    # the library call the console uses still rebuilds it: a writer may be appending
    with store.open(s.id) as log:
        assert replay_request(log, first).canonical == s.sent[first]


def test_window_refuses_a_malformed_event_after_seq(
    store: Store, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    """An event after SEQ of the wrong shape makes the log malformed; --window
    refuses it as --all does, naming the seq."""
    s = _recorded(store)
    first = min(s.sent)
    lines = read_lines(store, s.id)
    res = seq_of(lines, "tool.result", 1)
    assert res > first

    def bad(ls: list[Line]) -> list[Line]:
        for line in ls:
            if line["seq"] == res:
                line["data"]["error"] = "no"
        return ls

    rewrite(store, s.id, bad)
    code, out, err = run(store, capfdbinary, "replay", s.id, "--window", str(first))
    assert code == 5 and out == b""
    assert f"seq {res}" in err and "error" in err


def test_not_a_request(store: Store, capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    s = _recorded(store)
    with store.open(s.id) as log, pytest.raises(NotFoundError, match="is a user.msg, not an llm.req"):
        replay_request(log, 2)
    code, _, _ = run(store, capfdbinary, "replay", s.id, "--window", "999")
    assert code == 3


def test_replay_reads_only_from_the_start_point(store: Store) -> None:
    """Damage before a compaction's start is not read by a late request's replay, but --all sees it."""
    s = SessionBuilder(store=store, recipe=recipe())
    for i in range(3):
        s.turn(f"early {i}", [[("shell", f'{{"cmd":"e{i}"}}', f"early output {i}")]])
    s.add(CtxOpen(id="c1", kind="narrow", lasting=True, system="Continue."))
    s.user("handover", ctx="c1")
    s.turn("late", [[("shell", '{"cmd":"late"}', "late output")]], ctx="c1")
    s.close()
    last = max(s.sent)
    lines = read_lines(store, s.id)
    early = seq_of(lines, "tool.result")

    def bad(ls: list[Line]) -> list[Line]:
        ls[early - 1]["data"]["error"] = "no"
        return ls

    rewrite(store, s.id, bad)
    with store.open(s.id) as log:
        assert replay_request(log, last).canonical == s.sent[last]
        verdicts = list(verify_all(log))
    assert isinstance(verdicts[-1].error, CorruptLogError) and f"seq {early}" in str(verdicts[-1].error)


@pytest.mark.forges_digests
def test_mismatch_of_every_request_is_reported_by_all(store: Store) -> None:
    s = _recorded(store)
    first_user = seq_of(read_lines(store, s.id), "user.msg")
    rewrite(store, s.id, lambda ls: _edit_text(ls, first_user, "read z"))
    with store.open(s.id) as log:
        verdicts = list(verify_all(log))
    assert [v.seq for v in verdicts] == sorted(s.sent)
    assert all(isinstance(v.error, DigestMismatchError) for v in verdicts)


def test_a_session_fixture_request_equals_sent(session: Callable[..., SessionBuilder]) -> None:
    s = session(recipe(8))
    s.turn("old recipe v8", [[("shell", '{"cmd":"true"}', "")]], "ok")


def test_replay_reads_no_configuration(
    store: Store, capfdbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A broken config.toml and an untrusted extension folder change nothing: replay reads the log."""
    s = _recorded(store)
    bad = tmp_path / "config.toml"
    bad.write_text("this is [not toml\n")
    monkeypatch.setenv("NODWYN_CONFIG", str(bad))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / ".nodwyn").mkdir()
    (tmp_path / ".nodwyn" / "init.py").write_text("raise SystemExit('extension files must not run')\n")
    monkeypatch.chdir(tmp_path)
    seq = max(s.sent)
    code, out, err = run(store, capfdbinary, "replay", s.id, "--window", str(seq))
    assert (code, out, err) == (0, s.sent[seq], "")


def _set_text(lines: list[Line]) -> list[Line]:
    return _edit_text(lines, seq_of(lines, "user.msg", 1), "read c")


def _drop_digest(lines: list[Line]) -> list[Line]:
    del lines[seq_of(lines, "llm.req", -1) - 1]["data"]["digest"]
    return lines


def _drop_recipe(lines: list[Line]) -> list[Line]:
    del lines[0]["data"]["recipe"]
    return lines


def _v13(lines: list[Line]) -> list[Line]:
    lines[0]["data"]["recipe"]["version"] = "window-v13"
    return lines


def _bad_kind(lines: list[Line]) -> list[Line]:
    lines[2]["kind"] = "user.shout"
    return lines


@pytest.mark.forges_digests  # its mismatch case edits a recorded request on purpose
@pytest.mark.parametrize(
    ("edit", "window", "code"),
    [
        (_set_text, "last", 6),
        (_drop_digest, "last", 7),
        (_drop_recipe, "last", 7),
        (_v13, "last", 8),
        (_bad_kind, "last", 5),
        (None, "999", 3),
        (None, "2", 3),
    ],
    ids=["mismatch", "legacy-request", "legacy-session", "unknown-version", "malformed", "no-seq", "not-req"],
)
def test_every_window_refusal_is_one_line_naming_the_session_and_its_exit_code(
    store: Store,
    capfdbinary: pytest.CaptureFixture[bytes],
    edit: Callable[[list[Line]], list[Line]] | None,
    window: str,
    code: int,
) -> None:
    s = _recorded(store)
    if edit is not None:
        rewrite(store, s.id, edit)
    seq = str(max(s.sent)) if window == "last" else window
    got, out, err = run(store, capfdbinary, "replay", s.id, "--window", seq)
    assert (got, out) == (code, b"")
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith(f"nodwyn: session {s.id}"), err


def test_offsets_are_found_by_counting_lines_when_the_index_cannot_be_rebuilt(store: Store) -> None:
    s = _recorded(store)
    raw = log_path(store, s.id).read_bytes()
    lines = raw.splitlines(keepends=True)
    lines[5] = lines[5].replace(b'{"seq":6,', b'{"seq":60,', 1)  # out of sequence: no index can be built
    write_raw(store, s.id, b"".join(lines))
    with store.open(s.id) as log:
        with pytest.raises(CorruptLogError):
            log.offset_of(3)
        assert offset_of(log, 3) == sum(map(len, lines[:2]))
        assert offset_of(log, 6) is None  # its line does not hold seq 6
        assert offset_of(log, 7) == sum(map(len, lines[:6]))
        assert offset_of(log, len(lines) + 1) is None


def test_a_damaged_kind_is_refused_as_damage_in_one_line(
    store: Store, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    s = _recorded(store)

    def bad(lines: list[Line]) -> list[Line]:
        lines[1]["kind"] = "user.msg\nllm.req"
        return lines

    rewrite(store, s.id, bad)
    code, out, err = run(store, capfdbinary, "replay", s.id, "--window", "2")
    assert (code, out) == (5, b"")
    assert err.count("\n") == 1 and "(seq 2) has kind 'user.msg\\nllm.req'" in err


def test_a_context_id_the_log_never_writes_is_damage(
    store: Store, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    s = _recorded(store)
    last = max(s.sent)

    def bad(lines: list[Line]) -> list[Line]:
        lines[last - 1]["ctx"] = "main\nseq 1 ok"
        return lines

    rewrite(store, s.id, bad)
    code, out, err = run(store, capfdbinary, "replay", s.id, "--window", str(last))
    assert (code, out) == (5, b"") and err.count("\n") == 1 and "'main\\nseq 1 ok'" in err
    code, out, _ = run(store, capfdbinary, "replay", s.id, "--all")
    assert code == 5 and len(out.splitlines()) == len(s.sent) + 1  # one line per verdict, then the total


def test_a_recorded_digest_of_another_form_is_damage(
    store: Store, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    s = _recorded(store)
    last = max(s.sent)

    def bad(lines: list[Line]) -> list[Line]:
        lines[last - 1]["data"]["digest"] += "\nseq 1 ok"
        return lines

    rewrite(store, s.id, bad)
    code, out, err = run(store, capfdbinary, "replay", s.id, "--window", str(last))
    assert (code, out) == (5, b"") and err.count("\n") == 1 and "llm.req.digest" in err
    code, out, _ = run(store, capfdbinary, "replay", s.id, "--all")
    assert code == 5 and len(out.splitlines()) == len(s.sent) + 1


def test_a_refusal_in_all_stays_on_its_line_whatever_its_message() -> None:
    line = _verdict_line(Verdict(seq=7, ctx="main", recorded=None, error=CorruptLogError("a\nseq 1 ok\r")))
    assert "\n" not in line and "\r" not in line and line.endswith("corruptlog: a\\nseq 1 ok\\r")
