"""cli/screen.py: what is shown is redacted and escaped, also when a reply streams in pieces."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nodwyn.cli import screen
from nodwyn.errors import AuthError
from nodwyn.log.redact import NO_KNOWN, Known, redact_error

HELD = "gateway-pass-7Hq2Lx9Vw"


@pytest.fixture(autouse=True)
def held() -> Iterator[None]:
    screen.hold(Known.of([HELD]))
    yield
    screen.hold(NO_KNOWN)


def stream(pieces: list[str]) -> str:
    s = screen.Stream()
    return "".join(s.feed(p) for p in pieces) + s.flush()


def test_a_held_value_split_across_fragments_is_never_shown() -> None:
    text = f"the password is {HELD}, keep it\n"
    for cut in range(1, len(text)):
        out = stream([text[:cut], text[cut:]])
        assert HELD not in out and "[redacted:credential]" in out


def test_a_header_and_its_token_in_separate_fragments_are_redacted_together() -> None:
    out = stream(["curl -H 'Authorization: Bearer ", "abcDEFghiJKLmnoPQRstu' https://x\n"])
    assert "abcDEF" not in out


def test_a_private_key_block_is_held_until_its_end() -> None:
    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n" * 3
    s = screen.Stream()
    shown = s.feed("here:\n-----BEGIN PRIVATE KEY-----\n") + s.feed(body)
    assert "MIIEvQ" not in shown
    shown += s.feed("-----END PRIVATE KEY-----\nafter\n") + s.flush()
    assert "MIIEvQ" not in shown and "[redacted:private-key]" in shown and "after" in shown


def test_controls_are_spelled_out_and_lines_kept() -> None:
    assert stream(["a\x1b]0;t\x07b\n", "c\rd\n"]) == "a\\x1b]0;t\\x07b\nc\\rd\n"
    assert screen.shown("x\ny", newlines=False) == "x\\ny"


def test_a_provider_error_echoing_the_key_is_redacted_in_message_and_body() -> None:
    exc = AuthError(
        f"openai HTTP 401: Incorrect API key provided: {HELD}", status=401, body=f'{{"k": "{HELD}"}}'
    )
    redact_error(exc, Known.of([HELD]))
    assert HELD not in str(exc) and HELD not in (exc.body or "")
    assert exc.status == 401 and isinstance(exc, AuthError)
