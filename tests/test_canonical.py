"""Canonical form: byte-identical to the rfc8785 reference, stable digests, floats refused."""

from __future__ import annotations

from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from nodwyn.errors import CanonicalError
from nodwyn.values.canonical import canonical_bytes, digest
from nodwyn.values.codec import request_from_json, request_to_json
from nodwyn.values.content import (
    AssistantMessage,
    ImagePart,
    Origin,
    TextPart,
    ThinkingBlock,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from nodwyn.values.request import Request, ToolSpec

# Any unicode except lone surrogates (which JSON text cannot carry); control characters included.
text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40)
ints = st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
json_values = st.recursive(
    st.none() | st.booleans() | ints | text,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(text, children, max_size=5),
    max_leaves=30,
)


@settings(max_examples=600)
@given(json_values)
def test_canonical_bytes_equal_rfc8785(value: Any) -> None:
    assert canonical_bytes(value) == rfc8785.dumps(value)


def _request(s: str) -> Request:
    origin = Origin(model="m", server="srv")
    return Request(
        system="sys " + s,
        tools=(ToolSpec(name="fs-read", description=s, parameters={"type": "object", "k": {s: [1, None]}}),),
        messages=(
            UserMessage(
                parts=(TextPart(text=s), ImagePart(digest="ab", media_type="image/png", width=1, height=2))
            ),
            AssistantMessage(
                text=s,
                thinking=s,
                calls=(ToolCall(id="c1", name="fs-read", arguments='{"path": "' + s[:3] + '"}'),),
                blocks=(ThinkingBlock(type="thinking", origin=origin, data=s, text=s, position=0),),
            ),
            ToolMessage(call_id="c1", name="fs-read", text=s, error=True),
        ),
        max_output=8192,
    )


@settings(max_examples=300)
@given(text)
def test_request_canonical_form_matches_rfc8785_and_round_trips(s: str) -> None:
    req = _request(s)
    as_json = request_to_json(req)
    assert canonical_bytes(as_json) == rfc8785.dumps(as_json)
    assert request_from_json(as_json) == req


def test_golden_digest_is_stable_across_runs_and_machines() -> None:
    req = _request("héllo \u2028 \x01 \U0001f600")
    assert digest(request_to_json(req)) == GOLDEN


GOLDEN = "sha256:1a67c4a9389fdf6b07e4d1279025bf684e9f8cfc4f1d0a75ed445ae141ac0c85"


def test_keys_sort_by_utf16_code_units() -> None:
    # U+E000 sorts after U+1F600 in UTF-16 (surrogates D83D..) but before it in code points.
    value = {"\ue000": 1, "\U0001f600": 2}
    assert canonical_bytes(value) == rfc8785.dumps(value)
    assert canonical_bytes(value).index("\U0001f600".encode()) < canonical_bytes(value).index(
        "\ue000".encode()
    )


@pytest.mark.parametrize("bad", [1.5, {"a": [0.0]}, 2**60, {1: "x"}, object()])
def test_values_without_canonical_form_are_refused(bad: Any) -> None:
    with pytest.raises(CanonicalError):
        canonical_bytes(bad)


def test_a_refusal_names_where_the_value_is() -> None:
    # the one-walk fast path hands anything it does not take to the normalising walk, which names
    # the place (ADR 0471)
    with pytest.raises(CanonicalError, match=r"\$\.a\[1\]\.b"):
        canonical_bytes({"a": [{"ok": (1, True, None)}, {"b": 0.5}]})
    with pytest.raises(CanonicalError, match=r"\$\[0\]\.n"):
        canonical_bytes([{"n": -(2**53)}])
