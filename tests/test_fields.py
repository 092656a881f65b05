"""values.fields is the one field reader: the log's payloads, the values' JSON shapes, other
agents' files and a provider's reply check a field the same way, each with its own error class."""

from __future__ import annotations

from typing import Any

import pytest

from nodwyn.dialects.wire import opt_list, opt_str
from nodwyn.errors import CorruptLogError, DecodeError, ImportFormatError
from nodwyn.imports.jsonfile import field as import_field
from nodwyn.values import codec
from nodwyn.values.events import SummaryRevoke
from nodwyn.values.fields import NULL, Fields, expect, field


def test_a_boolean_is_never_a_token_count() -> None:
    with pytest.raises(CorruptLogError, match=r"usage\.prompt_tokens: expected an integer, got a boolean"):
        codec.usage_from_json({"prompt_tokens": True})
    assert codec.usage_from_json({"prompt_tokens": 3}).prompt_tokens == 3


@pytest.mark.parametrize(
    ("read", "error", "message"),
    [
        (lambda: SummaryRevoke.from_data({"summary": True}), CorruptLogError, "summary.revoke.summary"),
        (
            lambda: codec.origin_from_json({"model": 5}),
            CorruptLogError,
            "origin.model: expected str, got int",
        ),
        (lambda: import_field({"role": 1}, "role", str, "f.json:3"), ImportFormatError, "f.json:3.role"),
        (lambda: opt_str({"t": 1}, "delta.text", "acme"), DecodeError, "acme: delta.text is an object"),
        (
            lambda: opt_list("x", "choices", "acme"),
            DecodeError,
            "choices is a string, expected an array or null",
        ),
    ],
)
def test_every_reader_refuses_with_its_own_error_naming_the_field(
    read: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message.replace(".", r"\.").replace("[", r"\[")):
        read()


def test_the_reader_declares_a_field_once_and_keeps_what_it_did_not_take() -> None:
    r = Fields({"a": 1, "b": [1, 2], "n": None, "later": "x"}, "thing")
    assert r.get("a", int) == 1
    assert r.items("b", int) == (1, 2)
    assert r.get("n", (int, NULL), 0) is None
    assert r.get("gone", str, "default") == "default"
    assert r.extra() == {"later": "x"}
    with pytest.raises(CorruptLogError, match=r"thing: missing field 'c'"):
        r.get("c", str)
    with pytest.raises(CorruptLogError, match=r"thing\.b\[1\]: expected str, got int"):
        Fields({"b": ["x", 2]}, "thing").items("b", str)
    assert expect(True, (int, bool), "flag") is True  # a field that takes booleans takes them
    assert field({"k": 2}, "k", int, "w") == 2
