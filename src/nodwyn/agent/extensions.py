"""Extension files: Python files loaded once, before a session's first message, never mid-session.

Where: ``<config dir>/extensions/*.py`` (the person's own), then ``<workspace>/.nodwyn/*.py`` only
if the workspace was trusted with ``nodwyn trust DIR`` (an untrusted one is skipped with a message).
Files run in name order with one name in scope, ``nodwyn``, an :class:`ExtensionApi`::

    nodwyn.tool("word-count", "Count the words of a file.", {"type": "object", ...}, run)
    nodwyn.task_header = "# The task"
    nodwyn.plan_header = "# The plan"
    nodwyn.system = "You are ..."           # replaces the base system prompt
    nodwyn.strategy("review", fn)            # fn(agent) -> None; run from chat as /review

What they set (tool specs, headers, the system prompt) goes into the session's recipe, so replay
rebuilds every request from the log without ever loading them.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodwyn.agent.config import config_dir
from nodwyn.agent.tools import builtin_tools
from nodwyn.agent.tools.base import Outcome, Tool, ToolContext
from nodwyn.errors import ConfigError
from nodwyn.values.request import ToolSpec

TRUST_FILE = "trusted"
Strategy = Callable[[Any], None]


class ExtensionApi:
    """What an extension file may set. Anything else it does is its own business."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.strategies: dict[str, Strategy] = {}
        self.task_header: str | None = None
        self.plan_header: str | None = None
        self.system: str | None = None

    def tool(
        self,
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        run: Callable[[dict[str, Any], ToolContext], str | Outcome],
        *,
        mutating: bool = False,
    ) -> None:
        if not isinstance(name, str) or not name or not isinstance(description, str):
            raise ConfigError("nodwyn.tool needs a name and a description")
        if name in self.tools:
            raise ConfigError(f"tool {name!r} is defined twice; give it another name")
        if name in builtin_tools():
            raise ConfigError(f"tool {name!r} has the name of a built-in tool; give it another name")

        def wrapped(args: dict[str, Any], ctx: ToolContext) -> Outcome:
            result = run(args, ctx)
            return result if isinstance(result, Outcome) else Outcome(text=str(result))

        self.tools[name] = Tool(
            spec=ToolSpec(name=name, description=description, parameters=dict(parameters)),
            run=wrapped,
            mutating=mutating,
        )

    def strategy(self, name: str, fn: Strategy) -> None:
        self.strategies[name] = fn


@dataclass(frozen=True, slots=True, kw_only=True)
class Extensions:
    tools: Mapping[str, Tool] = field(default_factory=dict)
    strategies: Mapping[str, Strategy] = field(default_factory=dict)
    task_header: str | None = None
    plan_header: str | None = None
    system: str | None = None
    loaded: tuple[Path, ...] = ()
    messages: tuple[str, ...] = ()  # e.g. an untrusted directory skipped


def _trust_path(env: Mapping[str, str]) -> Path:
    return config_dir(env) / TRUST_FILE


def trusted_dirs(env: Mapping[str, str]) -> set[Path]:
    path = _trust_path(env)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return set()
    return {Path(line) for line in lines if line.strip() and not line.startswith("#")}


def trust(directory: Path, env: Mapping[str, str]) -> Path:
    """Record ``directory`` (its real path) as trusted; its ``.nodwyn/*.py`` files will load."""
    real = directory.resolve()
    if not real.is_dir():
        raise ConfigError(f"{directory} is not a directory; give the workspace to trust")
    if real not in trusted_dirs(env):
        path = _trust_path(env)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            f.write(f"{real}\n")
    return real


def _run_file(path: Path, api: ExtensionApi) -> None:
    try:
        source = path.read_text(encoding="utf-8")
        code = compile(source, str(path), "exec")
        exec(code, {"nodwyn": api, "__file__": str(path), "__name__": f"nodwyn_ext_{path.stem}"})
    except SyntaxError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: extension file has a syntax error: {exc.msg}") from None
    except Exception as exc:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(path)]
        line = frames[-1].lineno if frames else "?"
        if isinstance(exc, ConfigError):  # what the file asked of nodwyn was refused
            raise ConfigError(f"{path}:{line}: {exc}") from None
        raise ConfigError(
            f"{path}:{line}: extension file failed: {type(exc).__name__}: {exc}; fix it or move it away"
        ) from None


def load_extensions(workspace: Path, env: Mapping[str, str] | None = None) -> Extensions:
    """Load the user's and (if trusted) the workspace's extension files, once."""
    env = os.environ if env is None else env
    api = ExtensionApi()
    loaded: list[Path] = []
    messages: list[str] = []
    user_dir = config_dir(env) / "extensions"
    for path in sorted(user_dir.glob("*.py")) if user_dir.is_dir() else []:
        _run_file(path, api)
        loaded.append(path)
    ws_dir = workspace / ".nodwyn"
    ws_files = sorted(ws_dir.glob("*.py")) if ws_dir.is_dir() else []
    if ws_files:
        if workspace.resolve() in trusted_dirs(env):
            for path in ws_files:
                _run_file(path, api)
                loaded.append(path)
        else:
            messages.append(
                f"skipped {len(ws_files)} extension file(s) in {ws_dir}: the workspace is not trusted; "
                f"run `nodwyn trust {workspace}` to load them"
            )
    return Extensions(
        tools=dict(api.tools),
        strategies=dict(api.strategies),
        task_header=api.task_header,
        plan_header=api.plan_header,
        system=api.system,
        loaded=tuple(loaded),
        messages=tuple(messages),
    )
