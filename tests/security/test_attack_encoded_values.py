"""Encoded forms of a held credential (issue 21, item 11).

The held values have no known shape, so only the held-value redaction can catch them, and they
reach the session encoded: base64 (a Kubernetes Secret manifest, confirmed on the wire),
`base64(user:value)` as in a docker config, JSON `\\u` and `\\/` escapes, URL-encoding, hex, and a
value split over two lines. Each is tried through `redact`, through the log file, and one real run
reads a Secret manifest and a docker config with fs-read: no form of the value is in the log, on
stdout/stderr or in any request the provider received.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.log.redact import Known, redact
from nodwyn.transport.credentials import write_keychain
from nodwyn.values.events import ToolResult

pytestmark = pytest.mark.attack("redaction shapes")

NODWYN = str(Path(sys.executable).parent / "nodwyn")
VALUE = "corpTok9/Xq2+Lm7Zv4Rw8Ps"  # a held value with "/" and "+", no known shape
PLAIN = "vault-Hk29Qm47Xc81Zr"  # another, letters, digits and "-" only
KNOWN = Known.of([VALUE, PLAIN])


def _b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def _every_char_u(s: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in s)


def _every_char_pct(s: str) -> str:
    return "".join(f"%{b:02X}" for b in s.encode())


def _split(s: str, at: int, joint: str = "\n") -> str:
    return s[:at] + joint + s[at:]


FORMS: dict[str, Callable[[str], str]] = {
    "base64": _b64,
    "base64 urlsafe": lambda s: base64.urlsafe_b64encode(s.encode()).decode(),
    "base64 unpadded": lambda s: _b64(s).rstrip("="),
    "base64 k8s secret": lambda s: f"apiVersion: v1\nkind: Secret\ndata:\n  token: {_b64(s)}\n",
    "base64 user:value": lambda s: _b64(f"deploy:{s}"),
    "base64 docker auth": lambda s: json.dumps({"auths": {"registry.corp": {"auth": _b64(f"ci-bot:{s}")}}}),
    "base64 offset 1": lambda s: _b64(f"x{s}y"),
    "base64 offset 2": lambda s: _b64(f"xy{s}"),
    "json \\u every char": _every_char_u,
    "json \\u some chars": lambda s: s[:3] + _every_char_u(s[3:6]) + s[6:],
    "json \\/ escape": lambda s: json.dumps({"t": s}).replace("/", "\\/"),
    "json dumps ascii": lambda s: json.dumps({"t": s + "é"}),
    "url-encoded": lambda s: "https://x.example/cb?code=" + quote(s, safe=""),
    "url-encoded lower": lambda s: re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(s, safe="")),
    "url-encoded every char": _every_char_pct,
    "hex": lambda s: s.encode().hex(),
    "hex upper": lambda s: s.encode().hex().upper(),
    "split over two lines": lambda s: _split(s, 7),
    "split early": lambda s: _split(s, 2),
    "split late": lambda s: _split(s, len(s) - 2),
    "split CRLF": lambda s: _split(s, 9, "\r\n"),
    "split indented": lambda s: _split(s, 10, "\n    "),
    "split backslash": lambda s: _split(s, 11, "\\\n"),
    "split json escaped": lambda s: json.dumps(_split(s, 8))[1:-1],
}


def _leaks(text: str, value: str) -> list[str]:
    """Which forms of ``value`` are still in ``text`` (decoded as each encoding would be)."""
    found = []
    for name, encode in FORMS.items():
        core = encode(value)
        if name.startswith("base64") or name.startswith("hex"):
            # the part of the form that depends on the value alone (no edge characters)
            middle = core[len(core) // 2 - 4 : len(core) // 2 + 4]
            if middle and middle in text and name in ("base64", "hex"):
                found.append(name)
        elif core in text:
            found.append(name)
    joined = "".join(text.split())
    if value in joined.replace("\\\n", "").replace("\\", ""):
        found.append("joined lines")
    return found


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("value", [VALUE, PLAIN], ids=["with-symbols", "plain"])
def test_encoded_form_is_redacted(form: str, value: str) -> None:
    text = f"config follows:\n{FORMS[form](value)}\nend"
    out, report = redact({"text": text}, KNOWN)
    assert out["text"] != text, form
    assert "[redacted:credential]" in out["text"]
    assert dict(report.replaced).get("credential", 0) >= 1
    assert not _leaks(out["text"], value), _leaks(out["text"], value)


@pytest.mark.parametrize(
    "form", ["base64 k8s secret", "base64 docker auth", "json \\u every char", "split over two lines"]
)
def test_encoded_form_never_reaches_the_log_file(tmp_path: Path, form: str) -> None:
    with Store(tmp_path, fsync=False, known=KNOWN).create() as log:
        log.append(ToolResult(call_id="c1", name="fs-read", text=FORMS[form](VALUE), error=False))
        raw = (log.path / "log.jsonl").read_text()
    assert FORMS[form](VALUE) not in raw
    assert FORMS[form](VALUE).replace("\n", "\\n") not in raw


def test_encoded_values_do_not_reach_the_provider(
    tmp_path: Path, person: Callable[..., dict[str, str]]
) -> None:
    """The issue's run: fs-read of a Kubernetes Secret and a docker config holding the keychain's
    value in base64; the next request carried it. Now no request, log or output holds any form."""
    secret = FORMS["base64 k8s secret"](VALUE)
    docker = FORMS["base64 docker auth"](VALUE)
    script: list[dict[str, Any]] = [
        {
            "text": "",
            "calls": [
                {"name": "fs-read", "id": "c1", "arguments": {"path": "secret.yaml"}},
                {"name": "fs-read", "id": "c2", "arguments": {"path": "config.json"}},
            ],
        },
        {"text": "All settings look fine."},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        env = {**person(tmp_path, fake.url), "PATH": os.environ.get("PATH", "")}
        write_keychain(
            tmp_path / "keychain.json", {"vault": {"value": VALUE, "origins": ["https://example.com"]}}
        )
        (tmp_path / "ws" / "secret.yaml").write_text(secret)
        (tmp_path / "ws" / "config.json").write_text(docker)
        done = subprocess.run(
            [NODWYN, "run", "check the deployment", "--yes"],
            env=env,
            cwd=tmp_path / "ws",
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        bodies = [json.dumps(r.body) for r in fake.requests]
    assert done.returncode == 0, done.stderr
    assert len(bodies) == 2
    log = next((tmp_path / "home").rglob("log.jsonl")).read_text()
    for encoded in (_b64(VALUE), _b64(f"ci-bot:{VALUE}")):
        assert encoded not in bodies[1]
        assert encoded not in log
        assert encoded not in done.stdout + done.stderr
    assert "[redacted:credential]" in bodies[1]
