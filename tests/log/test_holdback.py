"""``log.Holdback``: a streamed text let out as it comes, holding back only what could still become
a secret (issue 26, item 5; ADR 0430)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nodwyn.log import Holdback
from nodwyn.log.holdback import LOOK_BEHIND, context
from nodwyn.log.redact import Known, redact_text

HELD = "heldvalue-9876543210xyz"
KNOWN = Known.of([HELD])
# (text, what of it must never be shown)
SECRETS = [
    ("the key sk-ant-api03-" + "Ab1" * 20 + " and more words", "Ab1Ab1Ab1"),
    ("Authorization: Bearer abcDEF123ghiJKL456mno and done", "abcDEF123"),
    ('config: password = "correct horse battery staple" ok', "horse"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCA1234\n-----END RSA PRIVATE KEY-----\nx", "MIIEow"),
    (f"the held one {HELD} here", "9876543210"),
    ("a held value split heldvalue-98765\n43210xyz over a line", "98765"),
    ("export API_TOKEN=ghp_" + "a1B2" * 9 + " done", "a1B2a1B2"),
    ("postgres://user:s3cretPass99@db:5432/x ok", "s3cretPass99"),
]


def _streamed(text: str, cuts: list[int]) -> tuple[list[str], str]:
    h = Holdback(KNOWN)
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    out = [h.feed(text[a:b]) for a, b in zip(points, points[1:], strict=False)]
    out.append(h.flush())
    return out, "".join(out)


def test_the_look_behind_covers_every_patterns_context() -> None:
    widest = context()
    assert 0 < widest <= LOOK_BEHIND, widest


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(SECRETS), st.lists(st.integers(min_value=0, max_value=400), max_size=40))
def test_a_secret_split_anywhere_is_never_let_out(case: tuple[str, str], cuts: list[int]) -> None:
    text, secret = case
    assert secret not in redact_text(text, KNOWN)  # what the one redaction does to it whole
    _, shown = _streamed(text, cuts)
    assert secret not in shown, shown


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="abc xyz.,\n", max_size=200), st.lists(st.integers(0, 200), max_size=30))
def test_plain_text_comes_out_as_it_went_in(text: str, cuts: list[int]) -> None:
    assert _streamed(text, cuts)[1] == text


def test_prose_is_let_out_at_once_but_its_last_word() -> None:
    h = Holdback(KNOWN)
    assert h.feed("The build is green and the tests") == "The build is green and the "
    assert h.feed(" pass") == "tests "
    assert h.flush() == "pass"


def test_a_context_already_shown_still_redacts_the_value_after_it() -> None:
    h = Holdback(KNOWN)
    assert h.feed("Authorization: Bearer ") == "Authorization: Bearer "
    assert h.feed("abcDEF123ghi") == ""  # the run may still grow
    assert h.feed("JKL456mno next") == "[redacted:bearer-token] "
