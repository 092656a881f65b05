"""Redaction shapes: each secret a model, a tool or a person could put in a session must not reach
the log. The issue's 52 shapes (24 caught before, 28 missed), then one example of every rule of the
vendored gitleaks rule set, then look-alikes that must stay as they are."""

from __future__ import annotations

import base64
import random
import string
from pathlib import Path

import pytest

from nodwyn.log import Store
from nodwyn.log.redact import redact

pytestmark = pytest.mark.attack("redaction shapes")

RNG = random.Random(1111)
ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"
UPPER = string.ascii_uppercase + string.digits


def r(alphabet: str, n: int) -> str:
    while True:
        s = "".join(RNG.choice(alphabet) for _ in range(n))
        digits = any(c.isdigit() for c in s) or not any(c.isdigit() for c in alphabet)
        if digits and (any(c.isalpha() for c in s) or not any(c.isalpha() for c in alphabet)):
            return s


def pem(label: str) -> str:
    body = "\n".join(r(ALNUM + "+/", 64) for _ in range(5))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


def b64(raw: str) -> str:
    return base64.b64encode(raw.encode()).decode()


NODIGIT_TOKEN = "".join(RNG.choice(string.ascii_letters) for _ in range(40))

# (case, text with {} where the secret goes, the secret): after redaction the secret is gone
SHAPES: list[tuple[str, str, str]] = [
    # the 24 the issue found caught
    ("openai", "key {}", "sk-" + r(ALNUM, 48)),
    ("openai-proj", "OPENAI_API_KEY={}", "sk-proj-" + r(URLSAFE, 156)),
    ("openai-svcacct", "{}", "sk-svcacct-" + r(URLSAFE, 120)),
    ("openai-admin", "'{}'", "sk-admin-" + r(URLSAFE, 80)),
    ("anthropic", "x-api-key {}", "sk-ant-api03-" + r(URLSAFE, 93) + "AA"),
    ("anthropic-admin", "{}", "sk-ant-admin01-" + r(URLSAFE, 93) + "AA"),
    ("openrouter", "use {}", "sk-or-v1-" + r(HEX, 64)),
    ("github-ghp", "token {}", "ghp_" + r(ALNUM, 36)),
    ("github-gho", "{}", "gho_" + r(ALNUM, 36)),
    ("github-ghs", "{}", "ghs_" + r(ALNUM, 36)),
    ("github-ghu", "{}", "ghu_" + r(ALNUM, 36)),
    ("github-fine-grained", "{}", "github_pat_" + r(ALNUM, 22) + "_" + r(ALNUM, 59)),
    ("aws-akia", "id {}", "AKIA" + r(UPPER, 16)),
    ("aws-asia", "id {}", "ASIA" + r(UPPER, 16)),
    ("aws-secret", "aws_secret_access_key = {}", r(ALNUM + "/+", 40)),
    ("google-api-key", "?key={}", "AIza" + r(URLSAFE, 35)),
    ("rsa-private-key", "{}", pem("RSA PRIVATE KEY")),
    ("openssh-private-key", "{}", pem("OPENSSH PRIVATE KEY")),
    ("ec-private-key", "{}", pem("EC PRIVATE KEY")),
    ("pkcs8-private-key", "{}", pem("PRIVATE KEY")),
    ("encrypted-private-key", "{}", pem("ENCRYPTED PRIVATE KEY")),
    ("bearer", "Authorization: Bearer {}", r(ALNUM, 40)),
    ("url-password", "postgres://app:{}@db:5432/x", r(ALNUM, 16)),
    ("url-password-redis", "redis://:{}@cache:6379/0", r(ALNUM, 20)),
    # the 28 it missed
    ("slack-bot", "{}", f"xoxb-{r('0123456789', 12)}-{r('0123456789', 13)}-{r(ALNUM, 24)}"),
    (
        "slack-user",
        "{}",
        f"xoxp-{r('0123456789', 12)}-{r('0123456789', 12)}-{r('0123456789', 12)}-{r(HEX, 32)}",
    ),
    ("slack-webhook", "{}", f"https://hooks.slack.com/services/T{r(UPPER, 8)}/B{r(UPPER, 8)}/{r(ALNUM, 24)}"),
    (
        "jwt-bare",
        "token: {}",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
        + r(URLSAFE, 43),
    ),
    ("url-query-password", "https://example.com/login?user=bob&password={}", r(ALNUM, 12)),
    ("url-query-access-token", "https://api.example.com/v1/me?access_token={}&x=1", r(ALNUM, 32)),
    ("url-query-api-key", "GET /data?api_key={} HTTP/1.1", r(ALNUM, 32)),
    ("url-userinfo", "git clone https://deploy:{}@git.example.com/r.git", "hunter2hunter2"),
    ("env-password", "PASSWORD={}\n", "correct-horse-battery-7"),
    ("json-password", '{{"user": "bob", "password": "{}"}}', "Tr0ub4dor&3"),
    ("pgp-private-key", "{}", pem("PGP PRIVATE KEY BLOCK")),
    ("aws-session-token", "aws_session_token = {}", "IQoJb3JpZ2luX2VjE" + r(ALNUM + "/+", 300)),
    ("google-oauth", "Bearer {}", "ya29." + r(URLSAFE, 150)),
    ("google-oauth-bare", "token is {}", "ya29.a0" + r(URLSAFE, 120)),
    ("stripe-live", "stripe.api_key = '{}'", "sk_live_" + r(ALNUM, 24)),
    ("stripe-restricted", "{}", "rk_live_" + r(ALNUM, 24)),
    ("huggingface", "HF {}", "hf_" + "".join(RNG.choice(string.ascii_letters) for _ in range(34))),
    ("gitlab", "{}", "glpat-" + r(URLSAFE, 20)),
    ("npm", "//registry.npmjs.org/:_authToken={}", "npm_" + r(ALNUM, 36)),
    ("groq", "{}", "gsk_" + r(ALNUM, 52)),
    ("xai", "{}", "xai-" + r(ALNUM, 80)),
    ("twilio", "{}", "SK" + r(HEX, 32)),
    ("sendgrid", "{}", "SG." + r(URLSAFE, 22) + "." + r(URLSAFE, 43)),
    (
        "azure-account-key",
        "DefaultEndpointsProtocol=https;AccountName=acc;AccountKey={};EndpointSuffix=core.windows.net",
        r(ALNUM + "+/", 86) + "==",
    ),
    ("x-api-key-header", "curl -H 'x-api-key: {}' https://api.example.com", r(ALNUM, 40)),
    ("basic-auth", "Authorization: Basic {}", b64("admin:" + r(ALNUM, 14))),
    ("bearer-no-digit", "curl -H 'Authorization: Bearer {}'", NODIGIT_TOKEN),
    ("very-long-sk", "{}", "sk-proj-" + r(URLSAFE, 600)),
    ("glued-after-underscore", "OPENAI_KEY_{}", "sk-" + r(ALNUM, 48)),
    # more shapes the issue's classes imply
    ("yaml-password", "db:\n  password: {}\n", "s3cr3t-pa55"),
    ("compose-password", "    POSTGRES_PASSWORD: {}\n", "example-9f8e7d"),
    ("export-token", "export API_TOKEN={}", r(ALNUM, 30)),
    ("dsn-password", "host=db user=app password={} dbname=x", "pa55-w0rd-xyz"),
    ("flag-password", "mysql --password={} -h db", "hunter2-xyz9"),
    ("python-secret", 'client_secret = "{}"', r(ALNUM, 32)),
    ("double-encoded-password", '{{\\"password\\": \\"{}\\"}}', "Tr0ub4dor-33"),
    ("github-token-in-url", "https://x-access-token:{}@github.com/o/r.git", "ghs_" + r(ALNUM, 36)),
    ("azure-sas-sig", "https://acc.blob.core.windows.net/c/b?sv=2022&sig={}", r(ALNUM + "%", 40)),
    ("x-goog-api-key", "x-goog-api-key: {}", r(ALNUM, 39)),
    ("authorization-token", "Authorization: token {}", r(HEX, 40)),
    ("digitalocean", "{}", "dop_v1_" + r(HEX, 64)),
    ("shopify", "{}", "shpat_" + r(HEX, 32)),
    ("pypi", "password = {}", "pypi-AgEIcHlwaS5vcmc" + r(URLSAFE, 60)),
    ("age", "{}", "AGE-SECRET-KEY-1" + r("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
    ("vault", "VAULT_TOKEN={}", "hvs." + r(URLSAFE, 95)),
    ("perplexity", "{}", "pplx-" + r(ALNUM, 48)),
    ("linear", "{}", "lin_api_" + r(ALNUM, 40)),
    ("postman", "{}", "PMAK-" + r(HEX, 24) + "-" + r(HEX, 34)),
    ("new-relic", "new_relic_key: {}", "NRAK-" + r(UPPER, 27)),
    ("grafana-cloud", "{}", "glc_" + r(ALNUM, 32)),
    ("telegram", "telegram bot: {}", f"{r('0123456789', 10)}:AA{r(URLSAFE, 33)}"),
]


@pytest.mark.parametrize(("text", "secret"), [(t, s) for _, t, s in SHAPES], ids=[c for c, _, _ in SHAPES])
def test_secret_shape_is_redacted(text: str, secret: str) -> None:
    out, report = redact({"content": text.format(secret)})
    assert secret not in out["content"]
    assert "[redacted:" in out["content"]
    assert report.changed


def test_the_corpus_has_the_issues_52_shapes_and_more() -> None:
    assert len(SHAPES) >= 52 + 20


@pytest.mark.parametrize(
    ("text", "secret"), [(t, s) for _, t, s in SHAPES[:8]], ids=[c for c, _, _ in SHAPES[:8]]
)
def test_nothing_of_the_secret_reaches_the_log_file(tmp_path: Path, text: str, secret: str) -> None:
    with Store(tmp_path, fsync=False).create() as log:
        log.append_raw("tool.result", {"text": text.format(secret), "nested": [{"k": text.format(secret)}]})
        folder = log.path
    raw = b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())
    assert secret.encode() not in raw
