"""Why each request read what it read from the provider's cache.

For request k and its predecessor p (the previous request in the same context), both rebuilt
exactly (by replay, by the caller: this module does no I/O), compare their prefixes in wire order
(``prefix``) and classify k:

- ``first``: the context's first request; nothing to extend.
- ``appended``: p's whole prefix begins k (k is p with messages appended). The cache should serve
  p's prompt.
- ``moved``: we changed the prefix: a trim, fold, summary, model switch, new task or plan,
  resume, narrowing, or a change of offered tools or withheld images, named with its seq
  (``causes``). A model switch moves the cache even when the bytes held: providers cache per
  model. A prefix that moved with no cause recorded is reported as such: it breaks the
  prefix-extension invariant.
- ``server miss``: our prefix held, but the provider reported less cached than the common prefix
  by more than the tolerance; ``shortfall`` says how much. A partial hit that matches an older
  request's prompt (a replica that served that one) is named in ``matched``.
- ``no cache ask``: a server miss of a request that asked for no caching (llm.req ``cache_ask``
  ``"none"``) and whose reply reports nothing read from the cache and nothing written to it: a
  server that caches only when asked (Anthropic's) cached nothing because nothing asked it to;
  the detail names the setting (ADR 0112).
- ``unverified``: k or p could not be rebuilt (``unrebuilt`` names which, ``error`` says why).

Every request with a predecessor whose reply time is logged also gets ``idle_seconds``: the time
from the predecessor's ``llm.resp`` to this request's ``llm.req`` (the events' ``t``), how long the
cache sat unused before it: the commonest reason for a server miss is an entry the provider
dropped. ``lifetime_seconds`` is the lifetime the predecessor asked for (its ``cache_ask``:
``"ephemeral"`` 5 minutes, ``"1h"`` an hour, as Anthropic documents ``cache_control``), and
``past_lifetime`` says the idle time exceeded it; without an ask no lifetime is assumed (none is
guessed from a model's name, ADR 0297).

The common prefix is measured in bytes and converted to tokens by proportion (docs/adr/0091):
when k extends p the expected read is p's reported prompt tokens, otherwise common bytes / k's bytes
x k's prompt tokens.

A reply that kept the provider's own diagnosis (``CacheReport``, asked for by an entry with
``cache_diagnostics``; ADR 0312) puts its reason beside ours; ``disagrees`` flags a request where
one says the prefix moved and the other that it held.

A diagnosis is data; the CLI (``nodwyn cache``) and the console word it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from nodwyn.stats.causes import Cause
from nodwyn.stats.prefix import Chunks, Common, common_prefix, tokens_for, tolerance
from nodwyn.stats.times import seconds_between
from nodwyn.stats.totals import RequestRow

Kind = Literal["first", "appended", "moved", "server miss", "no cache ask", "unverified"]

# OpenAI and Anthropic cache no prompt shorter than this; a shorter prefix read from no cache is
# not a miss (docs/adr/0091).
MIN_CACHEABLE = 1024
# How many earlier requests of the context a partial hit is matched against.
MATCH_WINDOW = 500
# The lifetime a cache ask asks for, in seconds (Anthropic's cache_control: "ephemeral" is 5
# minutes, ttl "1h" an hour). Other asks ("none") and no ask assume none.
LIFETIMES = {"ephemeral": 300, "1h": 3600}
# Idle time at least this long is worth saying with a server miss (docs/adr/0297): shorter gaps
# are an agent's own pace (a model's reply, a tool run) and no provider documents a lifetime that short.
IDLE_WORTH_SAYING = 60


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnosis:
    seq: int
    ctx: str
    model: str  # the model entry the request went to
    predecessor: int | None
    kind: Kind
    causes: tuple[Cause, ...] = ()
    first_difference: str | None = None  # label of the first chunk that differs from p's
    common_bytes: int | None = None
    total_bytes: int | None = None
    appended: int | None = None  # messages appended to p (when k extends p)
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    expected: int | None = None  # tokens the cache should have served
    shortfall: int | None = None  # expected - cached, when beyond the tolerance
    matched: int | None = None  # older request whose prompt the partial hit matched
    held: bool = False  # k extends p byte for byte (our prefix held)
    uncacheable: bool = False  # appended, read nothing, and the prefix is under MIN_CACHEABLE
    unrebuilt: int | None = None  # unverified: the request (k or p) that could not be rebuilt
    error: str | None = None  # unverified: why it could not be rebuilt
    observed: bool = False  # another agent sent it (imported): "moved" is the agent's doing
    idle_seconds: float | None = None  # from the predecessor's reply to this request; None: unknown
    lifetime_seconds: int | None = None  # the cache lifetime the predecessor asked for, if it asked
    past_lifetime: bool = False  # idle longer than the lifetime asked for
    # the provider's own diagnosis (ADR 0312): whether one was asked and kept, its reason (None: it
    # found no divergence), the tokens it says missed, and whether it contradicts ours
    provider_asked: bool = False
    provider_reason: str | None = None
    provider_missed: int | None = None
    disagrees: bool = False


Rebuilt = Chunks | str  # the request's chunks, or why it could not be rebuilt


def diagnose(
    row: RequestRow,
    rows: Mapping[int, RequestRow],
    rebuilt: Mapping[int, Rebuilt],
    older: Sequence[int] = (),
) -> Diagnosis:
    """Classify ``row``'s request. ``rows`` maps llm.req seqs to rows (for the predecessor and
    older requests); ``rebuilt`` holds k's and p's chunks (and any older request's, if known);
    ``older`` lists earlier request seqs of the same context to match a partial hit against.
    The provider's own diagnosis, when the reply kept one, goes beside it."""
    return beside_provider(_diagnose(row, rows, rebuilt, older), row)


# The provider's reasons that say the prefix changed (Anthropic's and OpenAI Responses' words);
# a hit (no reason) says it held; the others (pending, unavailable, not found) say neither.
PREFIX_CHANGED = frozenset(
    {
        "model_changed",
        "system_changed",
        "tools_changed",
        "messages_changed",
        "input_changed",
        "prompt_cache_key_changed",
        "text_format_changed",
        "reasoning_effort_changed",
        "verbosity_changed",
        "context_compacted",
        "service_tier_changed",
    }
)
_HELD: frozenset[str] = frozenset({"appended", "server miss", "no cache ask"})


def beside_provider(d: Diagnosis, row: RequestRow) -> Diagnosis:
    """``d`` with the provider's diagnosis of the request and whether the two disagree: one says
    the prefix moved and the other that it held (ADR 0312)."""
    report = row.provider
    if report is None:
        return d
    ours = "moved" if d.kind == "moved" else "held" if d.kind in _HELD else None
    theirs = "moved" if report.reason in PREFIX_CHANGED else "held" if report.reason is None else None
    return replace(
        d,
        provider_asked=True,
        provider_reason=report.reason,
        provider_missed=report.missed_tokens,
        disagrees=ours is not None and theirs is not None and ours != theirs,
    )


def _diagnose(
    row: RequestRow,
    rows: Mapping[int, RequestRow],
    rebuilt: Mapping[int, Rebuilt],
    older: Sequence[int],
) -> Diagnosis:
    d = _idle(_unverified(row), row, rows)
    mine = rebuilt.get(row.seq, "not rebuilt")
    if isinstance(mine, str):
        return replace(d, unrebuilt=row.seq, error=mine)
    if row.predecessor is None:
        return replace(d, kind="first", total_bytes=mine.size)
    theirs = rebuilt.get(row.predecessor, "not rebuilt")
    if isinstance(theirs, str):
        return replace(d, unrebuilt=row.predecessor, error=theirs)
    common = common_prefix(theirs, mine)
    expected = _expected(common, rows.get(row.predecessor), d.prompt_tokens, mine.size)
    shortfall, short = _shortfall(expected, d.cached_tokens)
    matched = None
    if shortfall is not None and d.cached_tokens:
        matched = _match(row, d.cached_tokens, mine, rows, rebuilt, older)
    d = replace(
        d,
        first_difference=common.first_difference,
        common_bytes=common.bytes,
        total_bytes=mine.size,
        expected=expected,
        shortfall=shortfall,
        matched=matched,
        held=common.extends,
    )
    if any(c.kind == "model switch" for c in row.causes):
        # a provider caches per model: what the new model's cache holds is not ours to expect
        d = replace(d, kind="moved", shortfall=None, matched=None)
        return replace(d, first_difference="model", expected=0) if common.extends else d
    if not common.extends:
        return replace(d, kind="moved")
    added = len(mine.parts) - len(theirs.parts)
    if shortfall is None:
        return replace(d, kind="appended", appended=added, uncacheable=short)
    kind: Kind = "no cache ask" if _unasked(row) else "server miss"
    return replace(d, kind=kind, appended=added)


def _unverified(row: RequestRow) -> Diagnosis:
    """The request's diagnosis before anything is compared."""
    usage = row.usage
    return Diagnosis(
        seq=row.seq,
        ctx=row.ctx,
        model=row.model,
        predecessor=row.predecessor,
        kind="unverified",
        causes=row.causes,
        prompt_tokens=usage.prompt_tokens if usage is not None else None,
        cached_tokens=usage.cached_tokens if usage is not None else None,
        observed=row.observed,
    )


def _idle(d: Diagnosis, row: RequestRow, rows: Mapping[int, RequestRow]) -> Diagnosis:
    """``d`` with the idle time before ``row`` and the lifetime its predecessor asked for."""
    prev = rows.get(row.predecessor) if row.predecessor is not None else None
    if prev is None:
        return d
    idle = seconds_between(prev.resp_t, row.t)
    lifetime = LIFETIMES.get(prev.cache_ask or "")
    past = idle is not None and lifetime is not None and idle > lifetime
    return replace(d, idle_seconds=idle, lifetime_seconds=lifetime, past_lifetime=past)


def _expected(common: Common, prev: RequestRow | None, prompt: int | None, size: int) -> int | None:
    """Tokens the cache should serve: p's prompt when k extends p, else the common bytes' share."""
    prev_prompt = prev.usage.prompt_tokens if prev is not None and prev.usage is not None else None
    if common.extends and prev_prompt is not None:
        return prev_prompt if prompt is None else min(prev_prompt, prompt)
    if prompt is not None:
        return tokens_for(common.bytes, size, prompt)
    return None


def _shortfall(expected: int | None, cached: int | None) -> tuple[int | None, bool]:
    """How far the read fell short of ``expected`` beyond the tolerance, and whether the prefix is
    too short for a provider to cache at all (then it is no shortfall)."""
    if expected is None or cached is None or cached >= expected - tolerance(expected):
        return None, False
    if expected < MIN_CACHEABLE and cached == 0:
        return None, True
    return expected - cached, False


def _unasked(row: RequestRow) -> bool:
    """The request asked for no caching and its reply read and wrote nothing."""
    u = row.usage
    return row.cache_ask == "none" and u is not None and not u.cached_tokens and not u.cache_write_tokens


def _match(
    row: RequestRow,
    cached: int,
    mine: Chunks,
    rows: Mapping[int, RequestRow],
    rebuilt: Mapping[int, Rebuilt],
    older: Sequence[int],
) -> int | None:
    """The latest older request (not the predecessor) whose shared prefix with k is what was read."""
    for seq in reversed(older[-MATCH_WINDOW:]):
        if seq >= row.seq or seq == row.predecessor:
            continue
        other = rows.get(seq)
        if other is None or other.usage is None or other.usage.prompt_tokens is None:
            continue
        theirs = rebuilt.get(seq)
        expected = other.usage.prompt_tokens
        if isinstance(theirs, Chunks):
            common = common_prefix(theirs, mine)
            if not common.extends and row.usage is not None and row.usage.prompt_tokens is not None:
                expected = tokens_for(common.bytes, mine.size, row.usage.prompt_tokens)
        if abs(expected - cached) <= tolerance(expected):
            return seq
    return None


def diagnose_all(rows: Sequence[RequestRow], rebuilt: Mapping[int, Rebuilt]) -> list[Diagnosis]:
    """Every request's diagnosis, in seq order."""
    by_seq = {r.seq: r for r in rows}
    seen: dict[str, list[int]] = {}
    out: list[Diagnosis] = []
    for row in rows:
        older = seen.setdefault(row.ctx, [])
        out.append(diagnose(row, by_seq, rebuilt, older))
        older.append(row.seq)
    return out
