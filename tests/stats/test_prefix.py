"""The common prefix of two requests in wire order, on bytes (``stats.prefix``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nodwyn.stats.prefix import Encoder, chunks, common_bytes, common_parts, common_prefix
from nodwyn.values.content import TextPart, UserMessage
from nodwyn.values.request import Request, ToolSpec

text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=30)
TOOL = ToolSpec(name="read", description="read a file", parameters={"type": "object"})


def user(t: str) -> UserMessage:
    return UserMessage(parts=(TextPart(text=t),))


@settings(max_examples=200, deadline=None)
@given(a=st.binary(max_size=64), b=st.binary(max_size=64))
def test_common_bytes_is_the_longest(a: bytes, b: bytes) -> None:
    n = common_bytes(a, b)
    assert a[:n] == b[:n]
    assert n == min(len(a), len(b)) or a[n] != b[n]


@settings(max_examples=100, deadline=None)
@given(prev=st.lists(text, max_size=6), cur=st.lists(text, max_size=6))
def test_common_parts_is_the_common_prefix_of_the_joined_bytes(prev: list[str], cur: list[str]) -> None:
    enc = Encoder()
    a = [enc.message(user(t)) for t in prev]
    b = [enc.message(user(t)) for t in cur]
    n, size = common_parts(a, b)
    assert size == common_bytes(b"".join(a), b"".join(b))
    assert a[:n] == b[:n] and (n == min(len(a), len(b)) or a[n] != b[n])


@settings(max_examples=60, deadline=None)
@given(system=text, prev=st.lists(text, max_size=5), cur=st.lists(text, max_size=5))
def test_a_shared_encoder_gives_the_same_chunks_as_a_fresh_one(
    system: str, prev: list[str], cur: list[str]
) -> None:
    enc = Encoder()
    a = Request(system=system, tools=(TOOL,), messages=tuple(user(t) for t in prev))
    b = Request(system=system, tools=(TOOL,), messages=tuple(user(t) for t in cur))
    assert enc.chunks(a) == chunks(a) and enc.chunks(b) == chunks(b)
    assert common_prefix(enc.chunks(a), enc.chunks(b)) == common_prefix(chunks(a), chunks(b))


def test_labels_name_the_system_each_tool_and_each_message() -> None:
    c = chunks(Request(system="s", tools=(TOOL,), messages=(user("a"), user("b"))))
    assert [c.label(i) for i in range(len(c.parts))] == ["system", "tool read", "message 0", "message 1"]
