"""Properties of the store over generated payloads: what is appended is what is read, by any range."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from nodwyn.log import Store

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
PAYLOADS = st.lists(
    st.dictionaries(st.text(max_size=8).filter(lambda k: k != "_redaction"), JSON, max_size=4), max_size=25
)


@settings(max_examples=60, deadline=None)
@given(payloads=PAYLOADS, bounds=st.tuples(st.integers(0, 30), st.integers(0, 30)), cut=st.integers(0, 40))
def test_read_returns_what_append_returned(
    payloads: list[dict[str, Any]], bounds: tuple[int, int], cut: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp), fsync=False)
        with store.create() as log:
            appended = [log.append_raw("note", p, ctx="c.1") for p in payloads]
            sid, path = log.id, log.path
        first, last = bounds
        with store.open(sid) as reader:
            assert list(reader.read()) == appended
            assert list(reader.read(first, last)) == appended[max(first, 1) - 1 : last]
        # an index cut at any length is caught up or rebuilt, and reads the same
        raw = (path / "index.bin").read_bytes()
        (path / "index.bin").write_bytes(raw[: max(0, len(raw) - cut * 3)])
        with store.open(sid) as reader:
            assert list(reader.read(first)) == appended[max(first, 1) - 1 :]
        with store.open(sid, write=True) as writer:
            assert writer.repaired is None
            assert writer.last_seq == len(appended)
        assert (path / "index.bin").read_bytes() == raw
