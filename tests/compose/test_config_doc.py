"""docs/config.md against the parser's own table, and ``nodwyn config path|show`` run as a
subprocess (issue 26, item 4; ADR 0381)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from nodwyn.compose.config import parse_config
from nodwyn.compose.config_keys import TABLES
from nodwyn.errors import ConfigError
from nodwyn.testing import isolated_env

DOC = Path(__file__).parents[2] / "docs" / "config.md"
NODWYN = str(Path(sys.executable).parent / "nodwyn")


def documented() -> dict[str, set[str]]:
    tables: dict[str, set[str]] = {}
    current = None
    for line in DOC.read_text().splitlines():
        if m := re.match(r"^## `\[([a-zA-Z.]+)\]`$", line):
            current = m.group(1)
            tables[current] = set()
        elif current and (m := re.match(r"^\| `([a-z_]+)` \|", line)):
            tables[current].add(m.group(1))
    return tables


def test_every_key_the_parser_takes_has_its_line_and_no_other() -> None:
    assert documented() == {table: set(keys) for table, keys in TABLES.items()}


@pytest.mark.parametrize("table", ["control", "tools", "window", "network"])
def test_a_key_not_in_the_table_is_refused_naming_the_page(table: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=rf"\[{table}\] colour: unknown key.*known keys are"):
        parse_config(f"[{table}]\ncolour = 1\n", tmp_path / "config.toml")


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([NODWYN, *args], env=env, capture_output=True, text=True, timeout=60)


def test_config_path_and_show_name_each_values_source(tmp_path: Path) -> None:
    import os

    env = isolated_env(tmp_path, PATH=os.environ.get("PATH", ""))
    where = Path(env["NODWYN_CONFIG"])
    missing = run(env, "config", "path")
    assert missing.returncode == 0 and missing.stdout == f"{where}\n"
    assert "does not exist yet" in missing.stderr
    where.write_text(
        '[control]\nmodel = "chat"\n[tools]\nshell_timeout = 5\n[network]\nmax_reply_mb = 8\n'
        '[models.chat]\napi = "openai-chat"\nmodel = "m"\nbase_url = "http://127.0.0.1:9"\n'
        "context_size = 8000\n"
    )
    shown = run(env, "config", "show", "--json")
    assert shown.returncode == 0, shown.stderr
    rows = {d["key"]: d for d in map(orjson.loads, shown.stdout.splitlines())}
    assert rows["control.model"] == {"key": "control.model", "value": "chat", "source": f"{where} [control]"}
    assert rows["tools.shell_timeout"]["value"] == 5.0 and rows["tools.shell_timeout"]["source"] != "default"
    assert rows["tools.sandbox"] == {"key": "tools.sandbox", "value": "workspace-write", "source": "default"}
    assert rows["network.max_reply_mb"]["value"] == 8
    assert rows["network.connect_timeout"]["source"] == "default"
    assert rows["models.chat.context_size"]["value"] == 8000
    assert rows["models.local"]["source"] == "built-in"
    every = {k.split(".", 1)[0] + "." + k.split(".")[1] for k in rows if k.split(".")[0] in TABLES}
    assert every == {f"{t}.{k}" for t in ("control", "tools", "window", "network") for k in TABLES[t]}
    text = run(env, "config", "show")
    assert any(
        line.startswith("control.model") and line.endswith(f"({where} [control])")
        for line in text.stdout.splitlines()
    )
    where.write_text("[tools]\nsandbox_mode = 1\n")
    bad = run(env, "config", "show")
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1
    assert "[tools] sandbox_mode: unknown key" in bad.stderr
