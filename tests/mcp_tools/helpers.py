"""Helpers for the MCP tests: the calc server (``calc_server.py``, written with the SDK) as a
config entry, a person's config with a scripted model, a ``Display`` that keeps the notices, and a
session on a scripted model (``session``) that every session test opens the same way."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodwyn.agent.ports import Quiet
from nodwyn.compose.setup import Opened, open_agent
from nodwyn.log import Store, data_root
from nodwyn.testing import ScriptedBackend, isolated_env
from nodwyn.values.events import TOOL_RESULT, Event

CALC = Path(__file__).with_name("calc_server.py")
SLOW_START = 120  # seconds a test server may take to start: importing the SDK took 38 s on a busy CI machine


def calc(name: str = "calc", *flags: str, **keys: Any) -> str:
    """A ``[mcp.NAME]`` table that starts the calc server with ``flags``."""
    args = [str(CALC), *flags]
    lines = [f"[mcp.{name}]", f"command = {json.dumps(sys.executable)}", f"args = {json.dumps(args)}"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in {"start_timeout": SLOW_START, **keys}.items()]
    return "\n".join(lines) + "\n"


def config(tmp_path: Path, model_url: str, *servers: str, extra: str = "", model: str = "") -> None:
    """``model``: more lines of the model's entry (``takes_images = true``)."""
    (tmp_path / "config.toml").write_text(
        f'[control]\nmodel = "m"\n{extra}\n[models.m]\napi = "openai-chat"\nmodel = "fake-model"\n'
        f'base_url = "{model_url}"\ncontext_size = 32000\n{model}\n\n' + "\n".join(servers)
    )


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"calls": [{"name": name, "arguments": arguments}]}


class Shown(Quiet):
    """A Display that keeps what the person would be told."""

    def __init__(self) -> None:
        self.notices: list[str] = []

    def notice(self, text: str) -> None:
        self.notices.append(text)


def events_of(env: dict[str, str], sid: str) -> list[Event]:
    with Store(data_root(env)).open(sid) as log:
        return list(log.read())


def results_of(events: list[Event]) -> list[dict[str, Any]]:
    return [e.data for e in events if e.kind == TOOL_RESULT]


@dataclass
class Run:
    """One session of ``session``: its model (what went over the wire), environment and display."""

    model: ScriptedBackend
    env: dict[str, str]
    tmp_path: Path
    workspace: Path
    shown: Shown = field(default_factory=Shown)
    sid: str = ""

    @contextmanager
    def open(self, **kw: Any) -> Iterator[Opened]:
        """The session opened (``resume=`` and the rest as ``open_agent`` takes them), closed after."""
        opened = open_agent(
            env=self.env, workspace=self.workspace, backend_for=lambda _: self.model, display=self.shown, **kw
        )
        try:
            self.sid = opened.agent.session_id
            yield opened
        finally:
            opened.close()

    def configure(self, *servers: str, extra: str = "", model: str = "") -> None:
        config(self.tmp_path, self.model.url, *servers, extra=extra, model=model)

    def events(self) -> list[Event]:
        return events_of(self.env, self.sid)

    def results(self) -> list[dict[str, Any]]:
        return results_of(self.events())


@contextmanager
def session(
    tmp_path: Path,
    workspace: Path,
    steps: Sequence[dict[str, Any]],
    *servers: str,
    extra: str = "",
    model: str = "",
    env: Callable[[Path], dict[str, str]] = isolated_env,
) -> Iterator[Run]:
    """A scripted model on a fake provider and a config naming ``servers``; the caller opens it."""
    with ScriptedBackend(list(steps)) as backend:
        run = Run(model=backend, env=env(tmp_path), tmp_path=tmp_path, workspace=workspace)
        run.configure(*servers, extra=extra, model=model)
        yield run
