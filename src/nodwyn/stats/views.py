"""JSON shapes of the figures: what ``nodwyn stats --json`` and ``nodwyn cache --json`` print, the
console's pages read and ``nodwyn export --format json`` holds, so all agree."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from nodwyn.stats.diagnosis import Diagnosis
from nodwyn.stats.totals import RequestRow, Sums, Totals
from nodwyn.values.codec import usage_to_json


def sums_json(s: Sums) -> dict[str, Any]:
    return {**asdict(s), "rate": s.cache_rate}


def totals_json(t: Totals) -> dict[str, Any]:
    return {
        "all": sums_json(t.all),
        "last_rate": t.last_rate,
        "last_reply": t.last_reply,
        "turns": t.turns,
        "by_turn": [{"turn": turn, **sums_json(s)} for turn, s in t.by_turn],
        "by_model": [{"model": model, **sums_json(s)} for model, s in t.by_model],
        "last_seq": t.last_seq,
        "fed": t.fed,
        "problems": list(t.problems),
        "prices_from": t.prices_from,
        "sandbox": t.sandbox,
        "shell_runs": dict(t.shell_runs),
    }


def row_json(r: RequestRow) -> dict[str, Any]:
    return {
        "seq": r.seq,
        "t": r.t,
        "ctx": r.ctx,
        "model": r.model,
        "turn": r.turn,
        "trim": r.trim,
        "estimate": r.estimate,
        "predecessor": r.predecessor,
        "causes": [{"kind": c.kind, "seq": c.seq} for c in r.causes],
        "resp": r.resp,
        "usage": usage_to_json(r.usage) if r.usage is not None else None,
        "rate": r.rate,
        "cost_usd": r.cost.usd if r.cost is not None else None,
        "drop": r.drop,
        **({"observed": True} if r.observed else {}),
    }


def diagnosis_json(d: Diagnosis) -> dict[str, Any]:
    out = asdict(d)
    if not d.observed:
        del out["observed"]  # only an imported request says so
    if not d.provider_asked:  # only a request that asked the provider's diagnosis (ADR 0312)
        for key in ("provider_asked", "provider_reason", "provider_missed", "disagrees"):
            del out[key]
    return out
