"""Encoded forms of held values (log/encoded.py, ADR 0331): what they find, and that random
reasoning blobs and ordinary text stay exactly as they were with values held."""

from __future__ import annotations

import base64
import random

import pytest

from nodwyn.log.encoded import forms_of, hidden_spans, may_hide, probes_of
from nodwyn.log.redact import Known, redact, redact_held

VALUES = ["kc-9f8e7d6c5b4a9f8e7d6c5b4a", "corpTok9/Xq2+Lm7Zv4Rw8Ps", "vault-Hk29Qm47Xc81Zr", "abcdefgh"]
KNOWN = Known.of(VALUES)


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("prefix", ["", "u", "us", "user:", "deploy-bot:"])
def test_base64_of_the_value_at_any_offset_holds_a_form(value: str, prefix: str) -> None:
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        encoded = encode((prefix + value + ":tail").encode()).decode()
        assert any(f in encoded for f in forms_of(value)), (prefix, value)


def test_nine_thousand_random_blobs_unchanged_with_values_held() -> None:
    """The seed's 9,000 random 16 KiB blobs, now with four values held (and their ~50 forms)."""
    rng = random.Random(20261201)
    encoders = (base64.b64encode, base64.urlsafe_b64encode)
    details = [
        {"type": "reasoning.encrypted", "data": encoders[i % 2](rng.randbytes(16384 + i % 3)).decode()}
        for i in range(9000)
    ]
    message = {"role": "assistant", "reasoning_details": details}
    out, report = redact(message, KNOWN)
    assert out == message
    assert report.replaced == ()


@pytest.mark.parametrize(
    "text",
    [
        "def f(x):\n    return '%02x' % x  # 100%25 done\n",
        'json: {"path": "a\\/b", "s": "\\u00e9t\\u00e9"}\n',
        "kc-9f8e\nsomething else entirely\n",  # a value's start, but not the value
    ],
)
def test_ordinary_text_is_unchanged(text: str) -> None:
    out = redact_held(text, KNOWN)
    assert out == text


def test_hidden_spans_cover_the_encoded_text_exactly() -> None:
    value = VALUES[1]
    escaped = "".join(f"\\u{ord(c):04x}" for c in value)
    s = f'{{"k": "{escaped}", "n": 1}}'
    assert may_hide(s, probes_of([value]))
    ((start, end),) = hidden_spans(s, [value])
    assert s[start:end] == escaped


def test_a_split_value_is_replaced_with_its_line_break() -> None:
    value = VALUES[2]
    s = f"token: {value[:6]}\n    {value[6:]}\nnext: 1\n"
    out = redact_held(s, KNOWN)
    assert out == "token: [redacted:credential]\nnext: 1\n"
