"""``nodwyn stats SESSION`` (totals and a per-request table) and ``nodwyn cache SESSION`` (why each
request read what it read from the provider's cache)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import click
import orjson

from nodwyn.cli.common import ROOT, SESSION, model_prices, resolved
from nodwyn.cli.screen import shown
from nodwyn.replay import diagnose_session
from nodwyn.stats import (
    IDLE_WORTH_SAYING,
    MIN_CACHEABLE,
    Aggregator,
    Diagnosis,
    RequestRow,
    Sums,
    diagnosis_json,
    percent,
    row_json,
    totals_json,
)


def aggregate(
    root: Path | None, session: str, *, diagnose: bool = False
) -> tuple[str, Aggregator, list[Diagnosis]]:
    """The session's figures from one read of its log, and with ``diagnose`` every request's
    diagnosis (one replay pass)."""
    store, sid = resolved(root, session)
    agg = Aggregator(model_prices())
    with store.open(sid, write=False) as log:
        agg.feed_all(log.read())
        diagnoses = diagnose_session(log, agg.rows) if diagnose else []
    return sid, agg, diagnoses


pct = percent  # half up, as the console rounds (Math.round) and `nodwyn run` prints it


def n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def _cost(s: Sums, *, short: bool = False) -> str:
    """``$0.0123``; ``unknown`` when no reply has a price, never ``$0.0000``."""
    if s.replies and s.cost_unknown == s.replies:
        return "unknown"
    if s.cost_unknown and not short:
        return f"${s.cost_usd:.4f} ({s.cost_unknown} replies without a price or count)"
    return f"${s.cost_usd:.4f}"


def _totals_text(sid: str, agg: Aggregator) -> list[str]:
    t = agg.totals()
    a = t.all
    cost = _cost(a)
    lines = [
        f"session {sid}",
        f"  Token cache rate        {pct(a.cache_rate)}"
        + (
            f"  ({a.rate_cached:,} of {a.rate_prompt:,} prompt tokens over {a.rate_replies} replies)"
            if a.rate_prompt
            else ""
        ),
        f"  Last request cache rate {pct(t.last_rate)}",
        f"  Requests / replies      {a.requests:,} / {a.replies:,}  ({t.turns} turn{_s(t.turns)})",
        f"  Prompt tokens           {a.prompt_tokens:,}"
        + (f"  ({a.no_usage} replies reported none)" if a.no_usage else ""),
        f"  Cached tokens           {a.cached_tokens:,}",
        f"  Uncached prefill tokens {a.uncached_tokens:,}",
        "  Cache writes            " + (f"{a.cache_write_tokens:,}" if a.writes_reported else "not reported"),
        f"  Output tokens           {a.output_tokens:,}"
        + (f"  ({a.reasoning_tokens:,} reasoning)" if a.reasoning_tokens else ""),
        f"  Cost                    {cost}",
    ]
    if t.sandbox is not None or t.shell_runs:
        runs = ", ".join(f"{n} under {mode}" for mode, n in t.shell_runs) or "none"
        lines.append(f"  Sandbox                 {t.sandbox or 'not recorded'}  (shell commands: {runs})")
    if len(t.by_model) > 1:
        lines.append("  by model:")
        lines += [
            f"    {m:<24} {pct(s.cache_rate):>8}  {s.requests:>5} requests  {_cost(s, short=True)}"
            for m, s in t.by_model
        ]
    if t.by_turn:
        lines.append("  by turn:")
        lines += [
            f"    turn {turn:<4} {pct(s.cache_rate):>8}  {s.requests:>5} reqs  {s.prompt_tokens:>10,} tokens"
            for turn, s in t.by_turn
        ]
    lines += [f"  problem: {p}" for p in t.problems]
    return lines


def _row_text(r: RequestRow) -> str:
    u = r.usage
    marks = []
    if r.trim:
        marks.append("trim")
    marks += [str(c) for c in r.causes if c.kind != "trim"]
    if r.drop:
        unasked = r.cache_ask == "none" and u is not None and not u.cached_tokens and not u.cache_write_tokens
        marks.append("suspected: no cache ask" if unasked else "suspected server miss")
    return (
        f"{r.seq:>7} {r.ctx[:10]:<10} {r.model[:20]:<20} {r.turn:>4} "
        f"{n(u.prompt_tokens if u else None):>10} {n(u.cached_tokens if u else None):>10} {pct(r.rate):>8}  "
        + "; ".join(marks)
    )


def describe(d: Diagnosis) -> str:
    """A diagnosis in one line: what the cache read and why (``stats.diagnosis`` gives the data),
    then the provider's own diagnosis beside it when one was asked for (ADR 0312)."""
    return _ours(d) + provider_words(d)


def provider_words(d: Diagnosis) -> str:
    """ "; provider: messages_changed (~1,234 tokens missed)", "; provider: no divergence", and
    "; DISAGREES with the provider" when the two say opposite things of the prefix; "" if not asked."""
    if not d.provider_asked:
        return ""
    said = d.provider_reason or "no divergence"
    if d.provider_missed is not None:
        said += f" (~{d.provider_missed:,} tokens missed)"
    return f"; provider: {said}" + ("; DISAGREES with the provider" if d.disagrees else "")


def _ours(d: Diagnosis) -> str:
    if d.kind == "unverified":
        return f"{'request' if d.unrebuilt == d.seq else 'predecessor'} {d.unrebuilt}: {d.error}"
    if d.kind == "first":
        return f"first request of context {d.ctx!r}{_read(d.cached_tokens, d.prompt_tokens)}"
    short = _short(d.cached_tokens, d.expected, d.shortfall or 0)
    if d.kind == "moved":
        if d.observed:  # another agent's request (imported): the agent moved it
            why = ", ".join(str(c) for c in d.causes) if d.causes else "its files record no reason"
            text = f"moved by the agent: {why}; first difference at {d.first_difference}"
        else:
            why = ", ".join(str(c) for c in d.causes) if d.causes else "no cause recorded (a window bug)"
            text = f"moved by us: {why}; first difference at {d.first_difference}"
        if d.held:  # only a model switch moves a prefix that held: each model has its own cache
            text += " (the prompt held, but each model has its own cache)"
        elif d.expected is not None:
            text += f"; ~{d.expected:,} tokens in common"
        if d.shortfall is not None:
            text += f"; and {short}"
        return text
    head = f"request {d.predecessor} + {d.appended} message{'s' if d.appended != 1 else ''}"
    if d.kind == "appended":
        text = f"appended: {head}{_read(d.cached_tokens, d.prompt_tokens, d.expected)}"
        if d.uncacheable:
            text += f"; a prefix under {MIN_CACHEABLE:,} tokens is not cached by most providers"
        return text
    if d.kind == "no cache ask":
        return (
            f"no cache ask: our prefix held ({head}) but {short}, and the provider wrote nothing to its "
            "cache: the request asked for no caching, and a server that caches only when asked "
            f'(Anthropic\'s) caches nothing then; set cache_control = "ephemeral" in [models.{d.model}]'
        )
    whose = "the agent's" if d.observed else "our"
    text = f"server miss: {whose} prefix held ({head}) but {short}"
    if d.matched is not None:
        text += f"; the hit matched request {d.matched}'s prompt (a replica that served it)"
    idle = idle_words(d)
    if idle:
        text += f"; {idle}"
    resumed = [c for c in d.causes if c.kind == "resume"]
    if resumed:
        text += f"; after the resume at seq {resumed[-1].seq} (the provider's cache may have expired)"
    return text


def idle_words(d: Diagnosis) -> str:
    """ "after 6 min 12 s idle" (", past the 5-minute lifetime asked for"), or "" when the idle time
    is unknown or under ``IDLE_WORTH_SAYING``."""
    if d.idle_seconds is None or d.idle_seconds < IDLE_WORTH_SAYING:
        return ""
    text = f"after {duration(d.idle_seconds)} idle"
    if d.past_lifetime and d.lifetime_seconds is not None:
        text += f", past the {_lifetime(d.lifetime_seconds)} lifetime asked for"
    return text


def duration(seconds: float) -> str:
    """Whole seconds as "45 s", "6 min 12 s", "6 min", "1 h 2 min"."""
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min" + (f" {s % 60} s" if s % 60 else "")
    return f"{s // 3600} h" + (f" {s % 3600 // 60} min" if s % 3600 // 60 else "")


def _lifetime(seconds: int) -> str:
    """A lifetime asked for as "5-minute" or "1-hour"."""
    if seconds % 3600 == 0:
        return f"{seconds // 3600}-hour"
    return f"{seconds // 60}-minute" if seconds % 60 == 0 else f"{seconds}-second"


def _read(cached: int | None, prompt: int | None, expected: int | None = None) -> str:
    if prompt is None:
        return "; no usage reported"
    if cached is None:
        return f"; {prompt:,} prompt tokens, the provider reports no cache reads"
    text = f"; read {cached:,} of {prompt:,} prompt tokens from the cache"
    if expected is not None:
        text += f" (~{expected:,} expected)"
    return text


def _short(cached: int | None, expected: int | None, shortfall: int) -> str:
    return f"read {cached or 0:,} of ~{expected or 0:,} cached tokens (shortfall {shortfall:,})"


def _emit_json(value: Any) -> None:
    click.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())


@click.command()
@SESSION
@click.option("--json", "as_json", is_flag=True, help="print the totals and rows as JSON")
@ROOT
def stats(session: str, as_json: bool, root: Path | None) -> None:
    """Totals (token cache rate, cost) and a per-request table of SESSION (an id, a prefix or latest)."""
    sid, agg, _ = aggregate(root, session)
    if as_json:
        _emit_json(
            {"session": sid, "totals": totals_json(agg.totals()), "requests": [row_json(r) for r in agg.rows]}
        )
        return
    for line in _totals_text(sid, agg):
        click.echo(shown(line))
    click.echo("")
    click.echo(
        f"{'seq':>7} {'ctx':<10} {'model':<20} {'turn':>4} {'prompt':>10} {'cached':>10} {'rate':>8}  notes"
    )
    for row in agg.rows:
        click.echo(shown(_row_text(row)))


@click.command()
@SESSION
@click.option("--json", "as_json", is_flag=True, help="print the diagnoses as JSON")
@ROOT
def cache(session: str, as_json: bool, root: Path | None) -> None:
    """Why each request of SESSION read what it read from the cache: appended, moved, server miss."""
    sid, _, diagnoses = aggregate(root, session, diagnose=True)
    if as_json:
        _emit_json(
            {"session": sid, "requests": [{**diagnosis_json(d), "detail": describe(d)} for d in diagnoses]}
        )
        return
    counts = Counter(d.kind for d in diagnoses)
    for d in diagnoses:
        flag = "!" if d.disagrees else " "
        click.echo(shown(f"{d.seq:>7}{flag}{d.ctx[:10]:<10} {d.kind:<12} {describe(d)}"))
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    disagreed = sum(1 for d in diagnoses if d.disagrees)
    if any(d.provider_asked for d in diagnoses):
        summary += f"; the provider disagrees on {disagreed} (marked !)"
    click.echo(f"\nsession {sid}: {len(diagnoses)} requests: {summary or 'none'}")
