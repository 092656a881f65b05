"""Redaction corpus: each known credential shape is replaced; random blobs and look-alikes are not."""

from __future__ import annotations

import base64
import copy
import random
import string
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodwyn.log import Store
from nodwyn.log.redact import RedactionReport, redact

RNG = random.Random(4242)
ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"


def _r(alphabet: str, n: int) -> str:
    while True:
        s = "".join(RNG.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in s):
            return s


PEM_BODY = "\n".join(_r(ALNUM + "+/", 64) for _ in range(6)) + "\n" + _r(ALNUM, 20) + "=="


def redact_text(text: str) -> tuple[str, RedactionReport]:
    out, report = redact(text)
    assert isinstance(out, str)
    return out, report


def _pem(label: str) -> str:
    return f"-----BEGIN {label}-----\n{PEM_BODY}\n-----END {label}-----"


# (shape, secret): the secret is what must disappear
SECRETS: list[tuple[str, str]] = [
    ("openai-key", "sk-" + _r(ALNUM, 48)),
    ("openai-key", "sk-proj-" + _r(URLSAFE, 156)),
    ("openai-key", "sk-svcacct-" + _r(URLSAFE, 120)),
    ("openai-key", "sk-admin-" + _r(URLSAFE, 80)),
    ("anthropic-key", "sk-ant-api03-" + _r(URLSAFE, 93) + "AA"),
    ("anthropic-key", "sk-ant-admin01-" + _r(URLSAFE, 93) + "AA"),
    ("openrouter-key", "sk-or-v1-" + _r("0123456789abcdef", 64)),
    ("github-token", "ghp_" + _r(ALNUM, 36)),
    ("github-token", "gho_" + _r(ALNUM, 36)),
    ("github-token", "ghs_" + _r(ALNUM, 36)),
    ("github-token", "github_pat_" + _r(ALNUM, 22) + "_" + _r(ALNUM, 59)),
    ("aws-access-key", "AKIA" + _r(string.ascii_uppercase + string.digits, 16)),
    ("aws-access-key", "ASIA" + _r(string.ascii_uppercase + string.digits, 16)),
    ("google-api-key", "AIza" + _r(URLSAFE, 35)),
    ("private-key", _pem("RSA PRIVATE KEY")),
    ("private-key", _pem("OPENSSH PRIVATE KEY")),
    ("private-key", _pem("EC PRIVATE KEY")),
    ("private-key", _pem("PRIVATE KEY")),
    ("private-key", _pem("ENCRYPTED PRIVATE KEY")),
]

# contexts a whole-token secret is met in; {} is the secret
CONTEXTS = [
    "{}",
    "use {} for the call",
    'export OPENAI_API_KEY="{}"',
    "API_KEY={}\nNEXT=1",
    '{{"api_key": "{}", "model": "x"}}',
    "https://api.example.com/v1/models?key={}&alt=json",
    "key:\t{}.",
    "('{}',)",
    "double-encoded: line one\\n{}\\nline three",
]

# secrets that are part of a larger shape: (shape, text with {}, secret)
PARTIAL: list[tuple[str, str, str]] = [
    (
        "bearer-token",
        "Authorization: Bearer {}",
        "eyJhbGciOiJIUzI1NiJ9." + _r(URLSAFE, 40) + "." + _r(URLSAFE, 43),
    ),
    ("bearer-token", "curl -H 'authorization: bearer {}' https://x", _r(ALNUM, 32)),
    ("bearer-token", '{{"headers": {{"Authorization": "Bearer {}"}}}}', _r(ALNUM + "._~+/-", 64) + "=="),
    ("url-password", "postgres://admin:{}@db.example.com:5432/app", _r(ALNUM, 12)),
    ("url-password", "see https://alice:{}@example.com/path", "p%40ss" + _r(ALNUM, 6)),
    ("url-password", "redis://:{}@localhost:6379/0", _r(ALNUM, 16)),
    ("aws-secret-key", "aws_secret_access_key = {}\n", _r(ALNUM + "/+", 40)),
    ("aws-secret-key", 'AWS_SECRET_ACCESS_KEY="{}"', _r(ALNUM + "/+", 40)),
    ("aws-secret-key", '"SecretAccessKey": "{}",', _r(ALNUM + "/+", 40)),
]


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize(("shape", "secret"), SECRETS, ids=[f"{s}-{i}" for i, (s, _) in enumerate(SECRETS)])
def test_each_shape_is_replaced_with_a_marker_naming_it(shape: str, secret: str, context: str) -> None:
    text = context.format(secret)
    out, report = redact_text(text)
    assert out == context.format(f"[redacted:{shape}]")
    assert dict(report.replaced) == {shape: 1}


@pytest.mark.parametrize(
    ("shape", "context", "secret"), PARTIAL, ids=[f"{s}-{i}" for i, (s, _, _) in enumerate(PARTIAL)]
)
def test_only_the_secret_part_of_a_header_url_or_assignment_is_replaced(
    shape: str, context: str, secret: str
) -> None:
    out, report = redact_text(context.format(secret))
    assert out == context.format(f"[redacted:{shape}]")
    assert dict(report.replaced) == {shape: 1}


def test_aws_secret_under_a_json_key_is_replaced() -> None:
    secret = _r(ALNUM + "/+", 40)
    out, report = redact({"aws_secret_access_key": secret, "region": "eu-west-1"})
    assert out == {"aws_secret_access_key": "[redacted:aws-secret-key]", "region": "eu-west-1"}
    assert dict(report.replaced) == {"aws-secret-key": 1}


def test_a_private_key_block_without_its_end_is_replaced_to_the_end() -> None:
    text = "here:\n" + _pem("RSA PRIVATE KEY")[:200]
    out, report = redact_text(text)
    assert out == "here:\n[redacted:private-key]"
    assert dict(report.replaced) == {"private-key": 1}


def test_walks_nested_values_and_keys_without_touching_the_input() -> None:
    key = SECRETS[0][1]
    value = {
        "a": [1, 2.5, True, None, {"deep": f"x {key} y"}],
        key: "as a key",
        "t": ("tuple", key),
        "n": 7,
    }
    before = copy.deepcopy(value)
    out, report = redact(value)
    assert value == before
    assert out == {
        "a": [1, 2.5, True, None, {"deep": "x [redacted:openai-key] y"}],
        "[redacted:openai-key]": "as a key",
        "t": ["tuple", "[redacted:openai-key]"],
        "n": 7,
    }
    assert dict(report.replaced) == {"openai-key": 3}


def test_redaction_is_idempotent() -> None:
    text = "\n".join(c.format(s) for _, c, s in PARTIAL) + "\n" + "\n".join(s for _, s in SECRETS)
    once, first = redact_text(text)
    twice, second = redact_text(once)
    assert twice == once
    assert second.replaced == ()
    assert sum(n for _, n in first.replaced) == len(PARTIAL) + len(SECRETS)


LOOKALIKES = [
    "scikit-learn and sk-learn are Python packages",
    "task-management-system-design-document-2024",
    "sk-this-is-not-a-key-just-a-long-identifier",  # no digit
    "ghp_short",
    "the AKIA prefix alone, AKIAshort",
    "AKIAIOSFODNN7EXAMPLEX is too long for an access key id",
    "use a Bearer token in the Authorization header",
    "Bearer <token>",
    "https://example.com:8080/path?x=1",
    "git@github.com:owner/repo.git",
    "mailto:someone@example.com",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",  # a sha256
    "550e8400-e29b-41d4-a716-446655440000",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUYz\n-----END CERTIFICATE-----",
    "my_secret_access_key_is_in_the_vault",
    "[redacted:openai-key] and Bearer [redacted:bearer-token]",
    "",
]


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalikes_are_not_changed(text: str) -> None:
    out, report = redact_text(text)
    assert out == text
    assert report.replaced == ()


def test_a_key_glued_inside_a_base64_run_is_not_a_key() -> None:
    inner = "sk-" + _r(ALNUM, 48)
    text = _r(ALNUM, 30) + inner + _r(ALNUM, 30)
    assert redact_text(text) == (text, redact_text(text)[1])
    assert redact_text(text)[1].replaced == ()


def test_unknown_high_entropy_strings_are_counted_not_changed() -> None:
    tokens = [_r(ALNUM + "+/", 40) for _ in range(5)]
    text = "tokens: " + " ".join(tokens) + " and words: configurationManagerFactory e3b0c44298fc1c149afbf4c8"
    out, report = redact_text(text)
    assert out == text
    assert report.replaced == ()
    assert report.unknown_entropy == 5


ENCODINGS: dict[str, Callable[[bytes], str]] = {
    "base64": lambda b: base64.b64encode(b).decode(),
    "base64url": lambda b: base64.urlsafe_b64encode(b).decode(),
    "base64url-unpadded": lambda b: base64.urlsafe_b64encode(b).decode().rstrip("="),
}


def test_nine_thousand_random_16k_blobs_pass_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    """9,000 random 16 KiB blobs, as OpenRouter's reasoning_details, beside a summary."""
    rng = random.Random(20261015)
    details = []
    for i in range(9000):
        name = list(ENCODINGS)[i % 3]
        raw = rng.randbytes(16384 + (i // 3) % 3)  # all three padding lengths
        details.append(
            {"type": "reasoning.encrypted", "data": ENCODINGS[name](raw), "id": f"rs_{i}", "format": name}
        )
    message = {
        "role": "assistant",
        "content": "",
        "reasoning_details": [
            {"type": "reasoning.summary", "summary": "Thinking about the fix.", "index": 0},
            *details,
        ],
    }
    out, report = redact(message)
    assert out == message
    unchanged = sum(
        a["data"] == b["data"] for a, b in zip(out["reasoning_details"][1:], details, strict=True)
    )
    assert report.replaced == ()
    assert report.unknown_entropy == 9000  # reported, not removed
    with capsys.disabled():  # the figure belongs in the test output
        print(
            f"\nredaction corpus: {unchanged} of 9000 random 16 KiB blobs unchanged, "
            f"{report.unknown_entropy} reported as unknown entropy"
        )


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(min_size=12, max_size=4096), encoding=st.sampled_from(sorted(ENCODINGS)))
def test_random_base64_of_any_length_is_unchanged(raw: bytes, encoding: str) -> None:
    blob = ENCODINGS[encoding](raw)
    out, report = redact({"reasoning_details": [{"data": blob}], "summary": "s"})
    assert out == {"reasoning_details": [{"data": blob}], "summary": "s"}
    assert report.replaced == ()


def test_blobs_reach_the_log_byte_for_byte(tmp_path: Path) -> None:
    rng = random.Random(5)
    blobs = [ENCODINGS[name](rng.randbytes(16384)) for name in sorted(ENCODINGS) for _ in range(20)]
    with Store(tmp_path, fsync=False).create() as log:
        event = log.append_raw("llm.resp", {"reasoning_details": blobs, "summary": "done"})
        (read,) = list(log.read())
    assert read == event
    assert read.data["reasoning_details"] == blobs
    assert read.data["_redaction"] == {"replaced": {}, "unknown_entropy": 60}


# -- the rule set (gitleaks' rules as data) and our own credential shapes -----------------------


def test_every_vendored_rule_compiles_and_needs_ten_characters() -> None:
    # the minimum width of a pattern; typeshed has no stub for the private parser (its public
    # name, sre_parse, is deprecated)
    import re._parser as sre_parse  # type: ignore[import-not-found]

    from nodwyn.log.redact import _GITLEAKS_SHORT
    from nodwyn.log.ruleset import EXCLUDED, gitleaks

    rules = gitleaks().rules
    assert len(rules) >= 200
    assert not {r.id for r in rules} & EXCLUDED
    for rule in rules:
        low, _ = sre_parse.parse(rule.regex.pattern, rule.regex.flags).getwidth()
        assert low >= _GITLEAKS_SHORT, rule.id  # redact skips the rule set on shorter strings


@pytest.mark.parametrize(
    ("go", "python"),
    [
        (r"\b(SG\.(?i)[a-z0-9=_\-\.]{66})", r"\b(SG\.(?i:[a-z0-9=_\-\.]{66}))"),
        ("a(?i)b|c", "a(?i:b)|(?i:c)"),
        (r"(?i)x(?-i:[Aa]pi)", r"(?i)x(?-i:[Aa]pi)"),
        (r"[[:alnum:]]{14}\z", r"[A-Za-z0-9]{14}\Z"),
        (r"[\w[]", r"[\w\[]"),
    ],
)
def test_go_regexes_are_translated(go: str, python: str) -> None:
    from nodwyn.log.ruleset import translate

    assert translate(go) == python


def test_a_leading_word_boundary_becomes_a_literal_first() -> None:
    import re

    from nodwyn.log.ruleset import literal_first

    fast = literal_first(r"\b(npm_[a-z0-9]{36})\b")
    assert fast.startswith("(npm_")
    for text in ["x npm_" + "a1" * 18 + " y", "xnpm_" + "a1" * 18, "_npm_" + "a1" * 18]:
        assert bool(re.search(fast, text)) == bool(re.search(r"\b(npm_[a-z0-9]{36})\b", text))


CODE_LOOKALIKES = [
    "self.password = password",
    "    token = self.next_token()",
    "def login(user: str, password: str) -> None:",
    "key_password=self.key_password,",
    'credential = "OPENROUTER_API_KEY"',
    "PASSWD = getpass.getpass(prompt)",
    "_PER_TOKEN = 1e-6",
    "headers = {'Authorization': f'Bearer {token}'}",
    "access_token=None,",
    "password: ${DB_PASSWORD}",
    'export OPENAI_API_KEY="$OPENAI_API_KEY"',
    "the secret of a good cache is a stable prefix; the key is the session id",
]


@pytest.mark.parametrize("text", CODE_LOOKALIKES)
def test_code_and_prose_that_names_secrets_is_not_changed(text: str) -> None:
    out, report = redact_text(text)
    assert out == text
    assert report.replaced == ()


def test_the_security_corpus_redacts_idempotently() -> None:
    from tests.security.test_attack_redaction import SHAPES as CORPUS

    text = "\n".join(t.format(s) for _, t, s in CORPUS)
    once, _ = redact_text(text)
    twice, second = redact_text(once)
    assert twice == once
    assert second.replaced == ()


def test_known_credential_values_are_replaced_whatever_their_shape() -> None:
    from nodwyn.log.redact import Known

    held = Known.of(["kc-value-not-a-known-shape-123", "short"])  # 'short' is below MIN_KNOWN
    out, report = redact(
        {"a": "env: X=kc-value-not-a-known-shape-123;", "kc-value-not-a-known-shape-123": "short"}, held
    )
    assert out == {"a": "env: X=[redacted:credential];", "[redacted:credential]": "short"}
    assert dict(report.replaced) == {"credential": 2}
    assert "kc-value" not in repr(held)


def test_a_known_value_is_found_inside_a_long_blob() -> None:
    from nodwyn.log.redact import Known

    value = "QmFzZTY0TG9va2luZ0tleVZhbHVlMTIz"
    blob = base64.b64encode(random.Random(3).randbytes(3000)).decode()
    out, report = redact(blob[:2000] + value + blob[2000:], Known.of([value]))
    assert value not in out
    assert dict(report.replaced) == {"credential": 1}
