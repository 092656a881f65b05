"""``nodwyn whatif SESSION… --budget 32k``: imported sessions replayed through nodwyn's window and
the peers' policies (``nodwyn.whatif``), side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import orjson

from nodwyn.cli.common import ROOT, resolved
from nodwyn.cli.complete import complete_sessions
from nodwyn.cli.screen import json_safe, shown
from nodwyn.errors import ConfigError
from nodwyn.imports import Run, conversation
from nodwyn.values.events import SessionStart, decode
from nodwyn.values.model import Prices
from nodwyn.whatif import POLICIES, Figures, Measured, figures, prepare, recorded

KI = 1024
AS_SENT = "as-sent"
AS_SENT_HELP = "what the agent sent, as its session records it"


def budget_tokens(text: str) -> int:
    """``32k`` / ``32K`` -> 32,768 tokens (Ki, as the benchmark counts); a bare number is tokens."""
    t = text.strip().lower()
    try:
        n = int(t[:-1]) * KI if t.endswith("k") else int(t)
    except ValueError:
        n = 0
    if n <= 0:
        raise ConfigError(f"--budget {text!r}: give tokens as a whole number or Ki, e.g. --budget 32k")
    return n


def session_prices(start: SessionStart, model: str) -> Prices | None:
    """The prices the imported session records for its model (``nodwyn import`` takes them from
    config.toml); None when it records none."""
    held = dict(start.recipe.prices or ()) if start.recipe is not None else {}
    return held.get(model) or (next(iter(held.values())) if len(held) == 1 else None)


def load_session(root: Path | None, session: str) -> tuple[str, Run, Prices | None]:
    store, sid = resolved(root, session)
    with store.open(sid, write=False) as log:
        first = decode(next(iter(log.read(1, 1))))
        run = conversation(log)
    prices = session_prices(first, run.model) if isinstance(first, SessionStart) else None
    return sid, run, prices


def usd_text(usd: float | None, unpriced: int, sessions: int) -> str:
    if usd is None:
        return "unknown"
    return f"${usd:.4f}" + (f" ({unpriced} of {sessions} sessions without prices)" if unpriced else "")


def figures_json(name: str, f: Figures, usd: float | None) -> dict[str, Any]:
    return {
        "policy": name,
        "models": POLICIES[name][1] if name in POLICIES else AS_SENT_HELP,
        "sessions": f.runs,
        "requests": f.requests,
        "side_calls": f.side_calls,
        "cached_share": round(f.cached_share, 4),
        "uncached_tokens": f.uncached_tokens,
        "minimum_tokens": f.minimum_tokens,
        "uncached_vs_minimum": round(f.uncached_ratio, 4),
        "over_budget": f.over_budget,
        "visible": round(f.visible, 4),
        "usd": None if usd is None else round(usd, 6),
    }


@click.command("whatif")
@click.argument("sessions", nargs=-1, required=True, shell_complete=complete_sessions)
@click.option("--budget", default="32k", show_default=True, help="prompt budget in tokens (32k = 32,768)")
@click.option("--json", "as_json", is_flag=True, help="one JSON document instead of the table")
@ROOT
def whatif(sessions: tuple[str, ...], budget: str, as_json: bool, root: Path | None) -> None:
    """What imported sessions would have cost under nodwyn's window and other agents' context
    policies (sliding window, SWE-agent masking, OpenHands condenser, opencode prune, Claude Code
    compaction): cached share, uncached tokens against the append-only minimum, requests over the
    budget, share of the conversation shown, cost at the session's prices (ADR 0290)."""
    tokens = budget_tokens(budget)
    loaded = [load_session(root, s) for s in sessions]
    names = [AS_SENT, *POLICIES]
    per_run: dict[str, list[tuple[list[Measured], int]]] = {name: [] for name in names}
    usd: dict[str, float] = dict.fromkeys(names, 0.0)
    priced = dict.fromkeys(names, 0)
    for _, run, prices in loaded:
        p = prepare(run)
        views = recorded.views(run)
        for name in names:
            if name == AS_SENT:
                if views is None:
                    continue
                reqs = recorded.replay(p, views)
            else:
                reqs = POLICIES[name][0](p, tokens)
            per_run[name].append((reqs, p.minimum))
            if prices is not None:
                usd[name] += figures([(reqs, p.minimum)], tokens, prices).usd or 0.0
                priced[name] += 1
    table = {name: figures(runs, tokens) for name, runs in per_run.items() if runs}
    cost = {name: (usd[name] if priced[name] else None) for name in table}
    unpriced = {name: table[name].runs - priced[name] for name in table}
    if as_json:
        doc = {
            "budget": tokens,
            "sessions": [{"id": sid, "name": run.name, "format": run.format} for sid, run, _ in loaded],
            "sessions_without_prices": unpriced["whole"],
            "policies": [figures_json(n, f, cost[n]) for n, f in table.items()],
        }
        click.echo(json_safe(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()))
        return
    ids = ", ".join(sid for sid, _, _ in loaded)
    click.echo(shown(f"{len(loaded)} session(s) at a budget of {tokens:,} tokens: {ids}"))
    click.echo(
        f"{'policy':<16} {'requests':>8} {'cached':>7} {'uncached':>12} {'vs min':>7} {'over':>5}"
        f" {'visible':>8}  cost"
    )
    for name, f in table.items():
        extra = f" +{f.side_calls}" if f.side_calls else ""
        price = usd_text(cost[name], unpriced[name], f.runs)
        click.echo(
            f"{name:<16} {str(f.requests) + extra:>8} {f.cached_share:>7.1%} {f.uncached_tokens:>12,}"
            f" {f.uncached_ratio:>6.2f}x {f.over_budget:>5} {f.visible:>8.1%}  {price}"
        )
    click.echo(
        f"minimum (every request whole, append-only): {table['whole'].minimum_tokens:,} uncached tokens;"
        " +N: summariser calls; cost: prompts and summaries (replies cost the same under every policy)"
    )
    if AS_SENT in table:
        click.echo(f"{AS_SENT}: {AS_SENT_HELP} ({table[AS_SENT].runs} of {len(loaded)} sessions record it)")
