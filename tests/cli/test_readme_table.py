"""The README's tables against ``nodwyn --help`` (every command, every top-level flag, every flag of
run, chat and resume), and its copy-paste line to try a fake, run as written (issue 26, item 10)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from nodwyn.testing import isolated_env

from .test_run import NODWYN

README = Path(__file__).parents[2] / "README.md"


def helped(*args: str) -> str:
    done = subprocess.run([*NODWYN, *args, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def section(text: str, title: str) -> list[str]:
    """The first words of the lines under ``title:`` in click's help."""
    lines = text.split(f"\n{title}:\n", 1)[1].splitlines()
    body = [line for line in lines[: next((i for i, x in enumerate(lines) if not x.strip()), len(lines))]]
    return [line.split()[0] for line in body if line.startswith("  ") and not line.startswith("   ")]


def flags(text: str) -> set[str]:
    """The long flags click's help lists under Options (``  -c, --continue``, ``  --yes``)."""
    block = text.split("\nOptions:\n", 1)[1]
    return set(re.findall(r"^  (?:-\w, )?(--[a-z][a-z-]*)", block, flags=re.MULTILINE))


def commands_table() -> str:
    text = README.read_text()
    return text[text.index("## Commands") : text.index("A SESSION is an id")]


def test_every_command_and_flag_is_in_the_readme() -> None:
    table = commands_table()
    top = helped()
    commands = section(top, "Commands")
    assert "export" in commands and "trust" in commands and "config" in commands  # the parse is real
    missing = [c for c in commands if f"`nodwyn {c}" not in table]
    assert not missing, f"commands not in README's table: {missing}"
    every = flags(top) | flags(helped("run")) | flags(helped("chat")) | flags(helped("resume"))
    every -= {"--help"}
    assert {"--image", "--yes", "--workspace", "--jsonl", "--version", "--continue", "--model"} <= every
    missing = sorted(f for f in every if not re.search(rf"`[^`]*{re.escape(f)}(?![\w-])", table))
    assert not missing, f"flags not in README's table: {missing}"


def test_the_try_a_fake_block_runs_as_written(tmp_path: Path) -> None:
    text = README.read_text()
    start = text.index("<!-- try-a-fake")
    block = text[start:].split("```sh\n", 1)[1].split("```", 1)[0]
    bin_dir = str(Path(NODWYN[0]).parent)
    env = isolated_env(tmp_path, PATH=f"{bin_dir}:{os.environ.get('PATH', '')}", TMPDIR=str(tmp_path))
    done = subprocess.run(["bash", "-c", block], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "Hello from a fake provider."
