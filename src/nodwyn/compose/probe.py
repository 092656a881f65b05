"""``nodwyn models test NAME``: two requests as a task sends them (the cache ask and the session key
included), the second extending the first with the first reply, its reasoning blocks given back
as the window gives them (only those of this entry's origin: its server, address and credential),
and what the provider said about each."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from nodwyn.agent import builtin_tools, catalog
from nodwyn.compose.config import Config
from nodwyn.compose.confinement import sandbox_for
from nodwyn.compose.servers import Servers, configured
from nodwyn.compose.setup import BASE_SYSTEM, held_values, started_servers
from nodwyn.dialects import api_profile, model_context, session_key
from nodwyn.errors import ConfigError, NodwynError, ProviderError
from nodwyn.log import NO_KNOWN, Known, redact_error
from nodwyn.mcp import ServerConfig
from nodwyn.transport import Backend
from nodwyn.values.content import AssistantMessage, TextPart, UserMessage
from nodwyn.values.model import ModelEntry
from nodwyn.values.request import Request, Response


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeResult:
    request: int
    ok: bool
    response: Response | None = None
    error: str | None = None
    field: str | None = None


def settings_sent(settings: ModelEntry) -> list[str]:
    sent = [f"api={settings.api}", f"cache_key={settings.cache_key}"]
    if api_profile(settings).has_family:
        sent.append(f"family={settings.family}")
    if settings.cache_control:
        sent.append(f"cache_control={settings.cache_control}")
    if settings.keep_reasoning:
        sent.append("keep_reasoning=true")
    if settings.keep_alive:
        sent.append(f"keep_alive={settings.keep_alive}")
    if settings.reasoning_effort:
        sent.append(f"reasoning_effort={settings.reasoning_effort}")
    return sent


def probe_model(backend: Backend, settings: ModelEntry, max_output: int = 32) -> list[ProbeResult]:
    key = session_key(f"nodwyn models test {settings.name}")  # a session of its own, named as any other
    tools = catalog(builtin_tools().values())
    first = Request(
        system=BASE_SYSTEM,
        tools=tools,
        messages=(UserMessage(parts=(TextPart(text="Reply with the word OK."),)),),
        max_output=max_output,
    )
    results: list[ProbeResult] = []
    request = first
    for n in (1, 2):
        try:
            response = backend.send(request, settings, session_key=key)
        except ProviderError as exc:
            creds = getattr(backend, "credentials", None)  # the provider may echo the key it was sent
            held = Known.of(c.value for c in creds.by_name.values()) if creds is not None else NO_KNOWN
            results.append(
                ProbeResult(request=n, ok=False, error=str(redact_error(exc, held)), field=exc.field)
            )
            break
        results.append(ProbeResult(request=n, ok=True, response=response))
        request = replace(
            first,
            messages=(
                *first.messages,
                AssistantMessage(
                    text=response.text,
                    calls=(),
                    blocks=tuple(
                        b for b in response.blocks if b.origin == settings.origin and b.position == 0
                    ),
                ),
                UserMessage(parts=(TextPart(text="Once more: reply with the word OK."),)),
            ),
        )
    return results


def report(settings: ModelEntry, results: list[ProbeResult]) -> list[str]:
    lines = [f"model {settings.name} ({settings.model}); sent: {', '.join(settings_sent(settings))}"]
    for r in results:
        if not r.ok:
            where = f" (field {r.field})" if r.field else ""
            lines.append(f"request {r.request}: refused{where}: {r.error}")
            continue
        assert r.response is not None
        u = r.response.usage

        def n(v: int | None) -> str:
            return "not reported" if v is None else f"{v:,}"

        ms = r.response.timings.prefill_ms
        timing = "" if ms is None else f", prefill {ms:,.0f} ms"
        lines.append(
            f"request {r.request}: accepted; prompt {n(u.prompt_tokens)}, "
            f"cache write {n(u.cache_write_tokens)}, cache read {n(u.cached_tokens)}{timing}"
        )
    return lines


@dataclass(frozen=True, slots=True, kw_only=True)
class Published:
    """What the provider's model list says of the model's context window (ADR 0432)."""

    size: int | None = None  # None: the list publishes none for this model
    field: str | None = None  # where it was (``context_length``, ``context_window``, ...)
    error: str | None = None  # why the list could not be read


def published_context(backend: Backend, settings: ModelEntry) -> Published:
    """The context size the provider's model list publishes for ``settings.model``, if it does.
    Only an HTTP backend has a model list; a provider error is reported, never raised."""
    from nodwyn.transport import HttpBackend

    if not isinstance(backend, HttpBackend):
        return Published()
    try:
        found = model_context(backend.model_list(settings), settings.model)
    except NodwynError as exc:
        return Published(error=str(redact_error(exc)))
    return Published() if found is None else Published(size=found[0], field=found[1])


def context_line(settings: ModelEntry, published: Published) -> str:
    """``models test``'s line on the context size: the provider's figure beside the entry's."""
    entry = f"the entry says {settings.context_size:,}"
    if published.error is not None:
        return f"context: the model list could not be read ({published.error}); {entry}"
    if published.size is None:
        return f"context: the provider's model list publishes none for {settings.model}; {entry}"
    line = f"context: {published.size:,} tokens in the provider's model list ({published.field}); {entry}"
    if published.size != settings.context_size:
        line += f"; to use the provider's: nodwyn models set {settings.name} context_size={published.size}"
    return line


def probe_servers(
    config: Config, workspace: Path, env: Mapping[str, str], only: str | None = None
) -> tuple[dict[str, ServerConfig], Servers, list[str]]:
    """Start the servers a session in ``workspace`` would (or only ``only``), for ``nodwyn mcp list``
    and ``nodwyn mcp test``; the caller closes ``Servers.hub``."""
    entries, skipped = configured(config, workspace, env)
    if only is not None:
        if only not in entries:
            known = ", ".join(sorted(entries)) or "none"
            raise ConfigError(
                f"no MCP server {only!r} is configured (known: {known}); add [mcp.{only}] to {config.path}"
            )
        entries = {only: replace(entries[only], enabled=True)}
    held, box = held_values(env, config), sandbox_for(env, config)
    started = started_servers(env, config, entries, workspace, known=held, taken=set(), box=box)
    return entries, started, skipped
