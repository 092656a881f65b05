"""Run the adversarial suite (tests/security) and write its table: attack classes, cases tried, held.

Each test marked ``@pytest.mark.attack("CLASS")`` is one case (see tests/security/README.md); a
case *held* when its test passed. The table lists the classes the issue names first (a class with
no case yet shows 0 tried), then any other class. Exit status 1 when a case failed.

    .venv/bin/python bench/security_table.py --out docs/security.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = "tests/security"
# The classes in table order, each with a line saying what its cases try (add yours here).
CLASSES = {
    "file-tool confinement": "a cloned repository's planted links (old temporary names, directory and "
    "file links, relative climbs, chains, loops), links swapped during approval, hard links, `..` and "
    "absolute paths, FIFOs; every file tool",
    "shell": "credentials in the environment (by name, by value, by shape, keychain), output floods, "
    "timeouts, Ctrl-C / SIGTERM / SIGHUP mid-command with a backgrounded child, session end (sandboxed "
    "and unsandboxed)",
    "tool deadlines": "catastrophic grep patterns, tools past their deadline",
    "credentials": "the real `nodwyn` run/resume: a shape-less env credential and a keychain value echoed by "
    "the model, a file, `printf`/`env` and a provider's 401; searched in the session folder, stdout/stderr "
    "and every request body; an attachment holding one; a held value rebuilt from which of one reply's "
    "fs-grep calls match (every position x 26 characters) or from fs-edit answers; ranged reads of a key; "
    "values that became credentials after they were "
    "logged, through `sessions` (-q, --json), `replay --json`, `log`, `export` to a pipe and `-o`, the "
    "console's routes; a credential typed into `nodwyn chat` (its history file)",
    "redaction shapes": "the issue's 52 shapes (24 caught before, 28 missed) and 20+ more from the rule set, "
    "each through redact and the log file (gitleaks rules as data, ADR 0130); held values encoded: base64 "
    "at every alignment, `base64(user:value)`, hex, URL-encoding, JSON `\\u`/`\\/` escapes, split lines; "
    "a Secret manifest and a docker config read by a real run",
    "terminal output": "CR + erase-line, OSC 0/52, CSI, C1 CSI/OSC, backspaces, BEL/NUL, bidi overrides, "
    "DEL in run output, replay, `log`, `log --json`; the approval prompt in a pty (whole command, escaped); "
    "the 16 KiB cut of a streamed line falling inside a held value; "
    "commands padded with 3,000 spaces, U+3000, U+2800, zero-width, tabs, newlines, a forged count",
    "console": "DNS-rebinding Host headers on loopback and wildcard binds (with --allow-remote), a taken "
    "port; the real `nodwyn console` command",
    "CLI inputs": "binary and non-UTF-8 fake scripts, a fake on a taken port, a log with a seq gap, "
    "`models test` against a provider that refuses the key",
    "storage": "a full disk (tiny tmpfs), a file-size limit, read-only, unreadable and non-folder "
    "NODWYN_HOME; the log stays whole and resumable; session file modes",
    "config": "unparsable base_url, TOML nested 50,000 deep, context_size 1 and 2^64, NaN/inf/negative "
    "timeouts and prices, unknown keys; a model's timeout against the shell cap",
    "provider faults": "servers that never answer, send headers only, keep-alives forever, drip forever; "
    "floods past the cap (deltas and one line), refused and never-accepted connections, retries "
    "inside the reply deadline, 204, negative usage, an origin refusal's note",
    "extension trust": "newline-injected trust entries, odd names, the old trust file, linked `.nodwyn` "
    "and files, swapped trusted paths, damaged trust lists, mutating tools without approval, hanging "
    "and failing extension tools; extension files written with fs-write/fs-edit approved",
    "nodwyn's own files": "every file tool, approved, on the config (base_url), keychain, trust list, "
    "extension dirs, session logs (the running one too), data dir, KV states, links into them",
    "tool arguments": "arguments nested 100,000 deep, integers of 5,000+ digits, lone surrogates in a "
    "plan or a sub-agent task; the run, resume and export go on; a failed resume records nothing",
    "repository shapes": "file names that are not UTF-8 (list, grep, not-found), trees 1,200 deep, "
    "names at the 255-byte limit",
    "log integrity": "a lock file replaced by rename, removed or copied under a live writer (a second "
    "`resume`), a log renamed over; hand-edited sealed logs (answer, usage, forged result with its digest "
    "rewritten, lines removed, reordered, appended, cut, another session's) against `nodwyn verify`",
    "import sources": "FIFOs and links to /dev/zero and /dev/urandom named as runs (given as a file or in a "
    "folder), tool_use inputs and messages nested 300 and 1,000 deep; under a memory limit",
    "OTLP collector": "a 500 and a 200 with 1 GB bodies, a collector dripping its body or its headers, "
    "the endpoint's password on success, refusal and an unreachable port",
    "sandbox": "real bwrap runs of the shell: writes outside by absolute path, `..`, symlinks, a hard link, "
    "a parent swapped for a link mid-command; `.git/config` and `.nodwyn/` (existing and missing); a "
    "loopback listener, `/dev/tcp`, an HTTP server on loopback, DNS, unix and abstract sockets; the "
    "keychain, `~/.ssh/id_*`, nodwyn's config and sessions; host processes in /proc; setsid, double-fork "
    "and signal-ignoring children; setuid, a new user namespace, ptrace of the agent, io_uring, x32; "
    "no bwrap, a bwrap without namespaces, a workspace path with a newline; `nodwyn run --yes` as reported, "
    "full-auto without a sandbox",
}


def run_suite(extra: list[str]) -> list[dict[str, object]]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"
        env = {**os.environ, "NODWYN_SECURITY_RESULTS": str(out)}
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", SUITE, *extra]
        subprocess.run(cmd, cwd=ROOT, env=env, check=False)
        if not out.exists():
            raise SystemExit(f"security_table: the suite wrote no results to {out}; did pytest start?")
        cases: list[dict[str, object]] = json.loads(out.read_text(encoding="utf-8"))["cases"]
        return cases


def table(cases: list[dict[str, object]]) -> str:
    tried = Counter(str(c["class"]) for c in cases)
    held = Counter(str(c["class"]) for c in cases if c["held"])
    order = [*CLASSES, *sorted(set(tried) - set(CLASSES))]
    rows = ["| attack class | tried | held | failed | what the cases try |", "|---|---:|---:|---:|---|"]
    for cls in order:
        what = CLASSES.get(cls, "")
        rows.append(f"| {cls} | {tried[cls]} | {held[cls]} | {tried[cls] - held[cls]} | {what} |")
    total, ok = sum(tried.values()), sum(held.values())
    rows.append(f"| **all** | **{total}** | **{ok}** | **{total - ok}** | |")
    failed = [c for c in cases if not c["held"]]
    lines = [
        "# The adversarial suite",
        "",
        "Each case is one test in `tests/security/` marked `@pytest.mark.attack(CLASS)`; it *held* when",
        "the attack did not work (the test passed). Regenerate this file with",
        "`.venv/bin/python bench/security_table.py --out docs/security.md`.",
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.",
        "",
        *rows,
    ]
    if failed:
        lines += ["", "Cases that failed:", ""] + [f"- `{c['test']}` ({c['class']})" for c in failed]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=None, help="write the table here (else print it)")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments, e.g. -k shell")
    args = parser.parse_args()
    cases = run_suite(args.pytest_args)
    text = table(cases)
    if args.out is None:
        print(text, end="")
    else:
        args.out.write_text(text, encoding="utf-8")
        print(text, end="")
    sys.exit(1 if any(not c["held"] for c in cases) else 0)


if __name__ == "__main__":
    main()
