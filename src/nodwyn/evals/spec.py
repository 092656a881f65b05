"""An eval's SPEC.toml, read into frozen values; every fault is one ``ConfigError`` line.

The eval's id is a digest of the spec's canonical content (not of its file's bytes), so the same
grid run again (``--resume``) is the same eval (ADR 0400).
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from nodwyn.errors import ConfigError

ORDERS = ("balanced", "random")
# The session settings a variant may set, each passed to the ordinary `nodwyn run` (ADR 0402).
VARIANT_KEYS = ("model", "recipe", "approval", "sandbox")
TASK_KEYS = ("name", "workspace", "prompt", "check", "timeout")


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    name: str
    workspace: Path  # a folder copied fresh for every run
    prompt: str
    check: str  # a shell command run in the run's workspace; exit 0 = solved
    timeout: float  # seconds for the session (the check has the same again)


@dataclass(frozen=True, slots=True, kw_only=True)
class Variant:
    name: str
    model: str | None = None
    recipe: str | None = None
    approval: str | None = None
    sandbox: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Spec:
    eval_id: str
    runs: int
    order: Literal["balanced", "random"]
    seed: int
    tasks: tuple[Task, ...]
    variants: tuple[Variant, ...]


def _text(table: dict[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
    value = table.get(key)
    if value is None:
        if required:
            raise ConfigError(f'{where}: `{key}` is missing; add {key} = "..."')
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: `{key}` must be a non-empty string, not {value!r}")
    return value


def _unknown(table: dict[str, Any], known: tuple[str, ...], where: str) -> None:
    extra = sorted(set(table) - set(known))
    if extra:
        raise ConfigError(f"{where}: unknown key {extra[0]!r}; the keys are {', '.join(known)}")


def _names(items: list[Any], what: str, path: Path) -> list[dict[str, Any]]:
    if not isinstance(items, list) or not items or not all(isinstance(i, dict) for i in items):
        raise ConfigError(f"{path}: at least one [[{what}]] table is needed")
    return items


def _task(t: dict[str, Any], where: str, path: Path) -> Task:
    """One ``[[task]]`` table of the spec at ``path``."""
    _unknown(t, TASK_KEYS, where)
    timeout = t.get("timeout", 600)
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        raise ConfigError(f"{where}: `timeout` must be a positive number of seconds, not {timeout!r}")
    ws = (path.parent / str(_text(t, "workspace", where))).resolve()
    if not ws.is_dir():
        raise ConfigError(f"{where}: workspace {ws} is not a folder; give a folder to copy for each run")
    return Task(
        name=str(_text(t, "name", where)),
        workspace=ws,
        prompt=str(_text(t, "prompt", where)),
        check=str(_text(t, "check", where)),
        timeout=float(timeout),
    )


def load_spec(path: Path) -> Spec:
    """Read ``path``; a task's workspace is relative to the spec's folder."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the eval spec {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not TOML ({exc}); fix the file") from None
    _unknown(raw, ("runs", "order", "seed", "task", "variant"), str(path))
    runs = raw.get("runs", 3)
    if not isinstance(runs, int) or isinstance(runs, bool) or runs < 1:
        raise ConfigError(f"{path}: `runs` must be a whole number of at least 1, not {runs!r}")
    order = raw.get("order", "balanced")
    if order not in ORDERS:
        raise ConfigError(f"{path}: `order` must be one of {', '.join(ORDERS)}, not {order!r}")
    seed = raw.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ConfigError(f"{path}: `seed` must be a whole number, not {seed!r}")
    tasks = [
        _task(t, f"{path}: [[task]] {i}", path)
        for i, t in enumerate(_names(raw.get("task", []), "task", path), 1)
    ]
    variants = []
    for i, v in enumerate(_names(raw.get("variant", []), "variant", path), 1):
        where = f"{path}: [[variant]] {i}"
        _unknown(v, ("name", *VARIANT_KEYS), where)
        fields = {k: _text(v, k, where, required=False) for k in VARIANT_KEYS}
        variants.append(Variant(name=str(_text(v, "name", where)), **fields))
    for what, names in (("task", [t.name for t in tasks]), ("variant", [v.name for v in variants])):
        if len(set(names)) != len(names):
            raise ConfigError(f"{path}: two [[{what}]] tables share a name; give each its own")
    canonical = {
        "runs": runs,
        "order": order,
        "seed": seed,
        "task": [{**t, "workspace": str(path.parent / t["workspace"])} for t in raw["task"]],
        "variant": raw["variant"],
    }
    digest = hashlib.sha256(orjson.dumps(canonical, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return Spec(
        eval_id=f"ev-{digest[:12]}",
        runs=runs,
        order=order,
        seed=seed,
        tasks=tuple(tasks),
        variants=tuple(variants),
    )
