"""What the file tools' redacted view costs (ADR 0322): fs-grep over a source tree, against the
same run's baseline.

For the tree (default: this repository's ``src`` and ``tests``), each text file is read and
decoded (what fs-grep did before the view: the baseline) and, separately, read, decoded and
redacted with three held values (what the view adds). The figures are the ratio of the two medians
over ``--rounds`` rounds, and the time of a real fs-grep over ``src`` with those values held, once
and again (the second from the session's view cache).

    .venv/bin/python bench/file_view.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from nodwyn.agent.tools import ToolContext, builtin_tools, run_call
from nodwyn.agent.tools.view import ViewCache
from nodwyn.log.redact import Known, redact_text
from nodwyn.values.content import ToolCall

ROOT = Path(__file__).resolve().parents[1]
HELD = Known.of(["corpLLM7Zq81Lm2Xv4Wd9", "vault-entry-P4r7Kd9Qs3W", "sk-held-0123456789abcdef"])


def _texts(roots: list[Path]) -> list[bytes]:
    out = []
    for root in roots:
        for p in sorted(root.rglob("*")):
            if (
                p.is_file()
                and p.suffix in (".py", ".md", ".toml", ".json", ".txt")
                and p.stat().st_size < 4 << 20
            ):
                out.append(p.read_bytes())
    return out


def _timed(texts: list[bytes], redacting: bool) -> float:
    start = time.perf_counter()
    for data in texts:
        text = data.decode("utf-8", errors="replace")
        if redacting:
            redact_text(text, HELD)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    roots = [ROOT / "src", ROOT / "tests"]
    texts = _texts(roots)
    size = sum(map(len, texts))
    _timed(texts, True)  # warm: the rule set's automaton is built once
    base = statistics.median(_timed(texts, False) for _ in range(args.rounds))
    viewed = statistics.median(_timed(texts, True) for _ in range(args.rounds))
    ctx = ToolContext(
        workspace=ROOT, read_budget_tokens=10_000, approve=lambda t, w: False, known=HELD, views=ViewCache()
    )
    call = ToolCall(
        id="b", name="fs-grep", arguments=json.dumps({"pattern": "def redact_text", "path": "src"})
    )
    greps = []
    for _ in range(2):  # the first makes the views, the second finds them in the session's cache
        start = time.perf_counter()
        out = run_call(call, builtin_tools(), ctx)
        greps.append(time.perf_counter() - start)
    assert not out.error, out.text
    print(f"files: {len(texts)}, {size / 1e6:.1f} MB of text under src/ and tests/")
    print(
        f"read+decode (the baseline): {base * 1e3:.0f} ms; with the view's redaction: {viewed * 1e3:.0f} ms"
    )
    print(f"ratio: {viewed / base:.0f}x the baseline; redaction at {size / 1e6 / (viewed - base):.2f} MB/s")
    first, again = greps[0] * 1e3, greps[1] * 1e3
    print(f"fs-grep over src/ with 3 held values: {first:.0f} ms, the same again {again:.0f} ms")


if __name__ == "__main__":
    main()
