"""Helpers for the MCP tests: the calc server (``calc_server.py``, written with the SDK) as a
config entry, and a person's config with a scripted model."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

CALC = Path(__file__).with_name("calc_server.py")


def calc(name: str = "calc", *flags: str, **keys: Any) -> str:
    """A ``[mcp.NAME]`` table that starts the calc server with ``flags``."""
    args = [str(CALC), *flags]
    lines = [f"[mcp.{name}]", f"command = {json.dumps(sys.executable)}", f"args = {json.dumps(args)}"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in keys.items()]
    return "\n".join(lines) + "\n"


def config(tmp_path: Path, model_url: str, *servers: str, extra: str = "") -> None:
    (tmp_path / "config.toml").write_text(
        f'[control]\nmodel = "m"\n{extra}\n[models.m]\napi = "openai-chat"\nmodel = "fake-model"\n'
        f'base_url = "{model_url}"\ncontext_size = 32000\n\n' + "\n".join(servers)
    )


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"calls": [{"name": name, "arguments": arguments}]}
