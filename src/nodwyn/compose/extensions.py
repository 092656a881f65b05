"""Extension files: Python files loaded once, before a session's first message, never mid-session.

Where: ``<config dir>/extensions/*.py`` (the person's own), then ``<workspace>/.nodwyn/*.py`` only
if the workspace was trusted with ``nodwyn trust DIR`` (an untrusted one is skipped with a message).
Trusted directories are a JSON list in ``<config dir>/trusted.json``; a workspace whose ``.nodwyn``
is a symlink, or a file there that is one, is not loaded (ADR 0123).
Files run in name order with one name in scope, ``nodwyn``, an :class:`ExtensionApi`::

    nodwyn.tool("word-count", "Count the words of a file.", {"type": "object", ...}, run)
    nodwyn.tool("deploy", "Deploy the site.", {...}, run, mutating=True)  # asks, like fs-write
    nodwyn.task_header = "# The task"
    nodwyn.plan_header = "# The plan"
    nodwyn.system = "You are ..."           # replaces the base system prompt
    nodwyn.strategy("review", fn)            # fn(agent) -> None; run from chat as /review

What they set (tool specs, headers, the system prompt) goes into the session's recipe, so replay
rebuilds every request from the log without ever loading them.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodwyn.agent import Outcome, Tool, ToolContext, builtin_tools, declined, fail
from nodwyn.compose.config import config_dir
from nodwyn.errors import ConfigError
from nodwyn.values.request import ToolSpec

TRUST_FILE = "trusted.json"
LEGACY_TRUST_FILE = "trusted"  # one path a line: a newline in a name injected paths; no longer read
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
            if mutating:
                what = f"run {name} with {json.dumps(args, ensure_ascii=False)}"
                if not ctx.approve(name, what):
                    return declined(name, f"run {name}")
            return _run_tool(name, run, args, ctx)

        self.tools[name] = Tool(
            spec=ToolSpec(name=name, description=description, parameters=dict(parameters)),
            run=wrapped,
            mutating=mutating,
        )

    def strategy(self, name: str, fn: Strategy) -> None:
        self.strategies[name] = fn


def _run_tool(
    name: str,
    run: Callable[[dict[str, Any], ToolContext], str | Outcome],
    args: dict[str, Any],
    ctx: ToolContext,
) -> Outcome:
    """Run an extension tool under the tool deadline, in a thread of its own: a call that does not
    return in time is answered with an error (the thread cannot be stopped, only left behind), and
    an exception is one line, never a traceback into the turn."""
    box: list[Outcome] = []

    def work() -> None:
        try:
            result = run(args, ctx)
            box.append(result if isinstance(result, Outcome) else Outcome(text=str(result)))
        except Exception as exc:
            box.append(fail(f"{name}: the extension tool failed: {type(exc).__name__}: {exc}"))

    thread = threading.Thread(target=work, name=f"ext-{name}", daemon=True)
    thread.start()
    thread.join(ctx.tool_timeout)
    if box:
        return box[0]
    return fail(
        f"{name}: no answer after {ctx.tool_timeout:g} s (the tool deadline); the extension tool was "
        "left running; fix it or raise [tools] tool_timeout"
    )


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
    """The trusted directories: ``{"trusted": ["/abs/dir", ...]}`` in trusted.json."""
    path = _trust_path(env)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return set()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the trust list ({exc}); fix or remove it") from None
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: the trust list is not valid JSON ({exc.msg}, line {exc.lineno}); fix or remove it"
        ) from None
    dirs = doc.get("trusted") if isinstance(doc, dict) else None
    if not isinstance(dirs, list) or not all(isinstance(d, str) and d.startswith("/") for d in dirs):
        raise ConfigError(
            f'{path}: the trust list must be {{"trusted": ["/absolute/dir", ...]}}; fix or remove it'
        )
    return {Path(d) for d in dirs}


def trust(directory: Path, env: Mapping[str, str]) -> Path:
    """Record ``directory`` (its real path) as trusted; its ``.nodwyn/*.py`` files will load."""
    real = directory.resolve()
    if not real.is_dir():
        raise ConfigError(f"{directory} is not a directory; give the workspace to trust")
    known = trusted_dirs(env)
    if real not in known:
        path = _trust_path(env)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = json.dumps({"trusted": sorted(str(d) for d in known | {real})}, indent=1, ensure_ascii=False)
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(body + "\n")
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
    return real


def _run_file(path: Path, api: ExtensionApi, source: str | None = None) -> None:
    try:
        if source is None:
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


def _workspace_files(workspace: Path) -> tuple[list[tuple[Path, str]], list[str]]:
    """The workspace's ``.nodwyn/*.py`` files and their text, read through directory descriptors
    without following a link: a ``.nodwyn`` that is a symlink (it would load code from elsewhere,
    trusted or not) or a file there that is one is refused with a message."""
    ws_dir = workspace / ".nodwyn"
    try:
        ws_fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return [], []
    try:
        try:
            st = os.stat(".nodwyn", dir_fd=ws_fd, follow_symlinks=False)
        except FileNotFoundError:
            return [], []
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(".nodwyn", dir_fd=ws_fd)
            return [], [
                f"not loading extension files from {ws_dir}: it is a symlink to {target}; "
                "extension files load only from a real .nodwyn directory in a trusted workspace"
            ]
        if not stat.S_ISDIR(st.st_mode):
            return [], []
        dir_fd = os.open(".nodwyn", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=ws_fd)
    finally:
        os.close(ws_fd)
    found: list[tuple[Path, str]] = []
    refused: list[str] = []
    try:
        with os.scandir(dir_fd) as it:
            names = sorted(e.name for e in it if e.name.endswith(".py"))
        for name in names:
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
            except OSError:
                refused.append(f"not loading {ws_dir / name}: it is a symlink or cannot be opened")
                continue
            with os.fdopen(fd, "rb") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    refused.append(f"not loading {ws_dir / name}: it is not a regular file")
                    continue
                raw = f.read()
            try:
                found.append((ws_dir / name, raw.decode("utf-8")))
            except UnicodeDecodeError:
                raise ConfigError(
                    f"{ws_dir / name}: extension file is not UTF-8 text; fix or remove it"
                ) from None
    finally:
        os.close(dir_fd)
    return found, refused


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
    found, refused = _workspace_files(workspace)
    messages.extend(refused)
    if found:
        if workspace.resolve() in trusted_dirs(env):
            for path, source in found:
                _run_file(path, api, source)
                loaded.append(path)
        else:
            legacy = config_dir(env) / LEGACY_TRUST_FILE
            old = (
                f" (the old trust list {legacy} is no longer read: a newline in a name could add paths)"
                if legacy.exists()
                else ""
            )
            messages.append(
                f"skipped {len(found)} extension file(s) in {ws_dir}: the workspace is not trusted{old}; "
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
