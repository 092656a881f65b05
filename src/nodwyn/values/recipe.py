"""The window recipe: everything a request's reconstruction depends on besides the log's events.

Recorded (redacted) by ``session.start`` and every ``session.resume``. Replay reads it from the
log, never from the current configuration. The algorithm version maps to a set of flags (the
on-disk vocabulary); code reads them resolved once into ``Rules`` (one named field per flag, and
the v20 constants), never version numbers or flag sets.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Any

from nodwyn.errors import UnknownRecipeError
from nodwyn.values.model import Prices
from nodwyn.values.request import ToolSpec


class Flag(StrEnum):
    """One rule of the window, named after the recipe version that introduced it."""

    SUMMARIES = "summaries"  # v2: revocable summaries replace eligible spans
    HEADERS = "headers"  # v6: task/plan headers from the recipe
    TOOL_SUBSETS = "tool_subsets"  # v7: no_tools / offered_tools
    OUTPUT_CAP = "output_cap"  # v8: max_output = output_reserve
    FOLDS = "folds"  # v9: result.fold replaces a result's text
    HEADROOM = "headroom"  # v10: a request may pass high water up to the ceiling
    IMAGES = "images"  # v12: attached images
    THINKING = "thinking"  # v14: a reply's thinking goes back on it
    IN_CONVERSATION = "in_conversation"  # v15: task and plan are user messages
    PAIRS = "pairs"  # v16: trimming preserves tool-call pairs
    NAMED_CUTS = "named_cuts"  # v17: cuts at line ends name the omitted lines
    BLOCKS = "blocks"  # v18: reasoning blocks go back with their reply
    WIDE_READS = "wide_reads"  # v19: fs-read shown up to twice the cap
    UNITS = "units"  # v20: whole units elided oldest first, one marker per run of them
    GROWTH = "growth"  # v20: the trim target follows the run's growth instead of low water
    HEAD = "head"  # v20: the first units after the task are kept (a head)
    TUNED = "tuned"  # v21: the v21 constants (a smaller head), set by the recipe's trim-depth dial
    SCALED_CAP = "scaled_cap"  # v21: a fixed window's result cap grows with its budget (sizing)
    WIDE_CAP = "wide_cap"  # v22: the cap grows faster (high water / 8), with its own trim constants
    SHOWN_GROWTH = "shown_growth"  # v22: the growth rule's g counts results as the cap shows them
    # Flags of their own, named by a recipe beside its version (``Recipe.extra_flags``, ADR 0113):
    KEPT_HEADERS = "kept_headers"  # a message keeps the task/plan header it was first shown under
    SUPERSEDED = "superseded"  # a newer overlapping summary hides an older one even once dropped (ADR 0300)


_INTRODUCED: dict[int, tuple[Flag, ...]] = {
    1: (),
    2: (Flag.SUMMARIES,),
    6: (Flag.HEADERS,),
    7: (Flag.TOOL_SUBSETS,),
    8: (Flag.OUTPUT_CAP,),
    9: (Flag.FOLDS,),
    10: (Flag.HEADROOM,),
    12: (Flag.IMAGES,),
    14: (Flag.THINKING,),
    15: (Flag.IN_CONVERSATION,),
    16: (Flag.PAIRS,),
    17: (Flag.NAMED_CUTS,),
    18: (Flag.BLOCKS,),
    19: (Flag.WIDE_READS,),
    20: (Flag.UNITS, Flag.GROWTH, Flag.HEAD),
    21: (Flag.TUNED, Flag.SCALED_CAP),
    22: (Flag.WIDE_CAP, Flag.SHOWN_GROWTH),
}

KNOWN_VERSIONS: tuple[int, ...] = tuple(sorted(_INTRODUCED))
# The version a new session starts on: v22, which met the bar set for it on the workload benchmark
# (docs/bench-workloads.md, ADRs 0150, 0390, 0460); a resumed session keeps its own unless asked
# (ADR 0151).
DEFAULT_VERSION = 22
CURRENT_VERSION = DEFAULT_VERSION  # the former name of DEFAULT_VERSION
# The lowest version a resume records unless asked otherwise: a session recorded before v16 resumes
# on v16 (the seed's amendment of 2026-10-04, "trimming preserves tool-call pairs"), so its next
# request leaves out the results of the replies an earlier recipe elided, which servers refuse as
# orphans; from v16 on a resume keeps the session's own version (ADRs 0151, 0300).
RESUME_FLOOR = 16


def resume_version(recorded: int) -> int:
    """The version a resumed session records when none is asked for: its own, at least v16."""
    return max(recorded, RESUME_FLOOR)


# Flags a recipe may name beside its version: a fix that changes what a window builds, recorded
# by the sessions that build with it, so a recipe without it replays as it was built whatever its
# version (ADR 0113). New sessions and resumes record every one.
EXTRA_FLAGS: tuple[Flag, ...] = (Flag.KEPT_HEADERS, Flag.SUPERSEDED)


@dataclass(frozen=True, slots=True)
class Policy:
    version: int
    flags: frozenset[Flag]

    def __contains__(self, flag: object) -> bool:
        return flag in self.flags


def parse_version(name: str) -> int:
    """``"window-v16"`` -> 16; anything else is refused."""
    prefix = "window-v"
    if not name.startswith(prefix) or not name[len(prefix) :].isdigit():
        raise UnknownRecipeError(
            f"recipe version {name!r} is not of the form window-vN; this log was not written by nodwyn"
        )
    return int(name[len(prefix) :])


def extra_flag(name: str) -> Flag:
    """A flag a recipe names beside its version; anything else is refused."""
    for flag in EXTRA_FLAGS:
        if flag.value == name:
            return flag
    known = ", ".join(f.value for f in EXTRA_FLAGS)
    raise UnknownRecipeError(
        f"recipe flag {name!r} is not one this nodwyn knows ({known}); "
        "upgrade nodwyn or replay the transcript with `nodwyn replay SESSION`"
    )


def policy_for(version: int) -> Policy:
    """The flags of a known version. Versions never defined (3, 4, 5, 11, 13) are unknown."""
    if version not in _INTRODUCED:
        known = ", ".join(f"v{v}" for v in KNOWN_VERSIONS)
        raise UnknownRecipeError(
            f"window-v{version} is not a recipe version this nodwyn knows ({known}); "
            "upgrade nodwyn or replay the transcript with `nodwyn replay SESSION`"
        )
    flags = frozenset(f for v, fs in _INTRODUCED.items() if v <= version for f in fs)
    return Policy(version=version, flags=flags)


@dataclass(frozen=True, slots=True, kw_only=True)
class Tuning:
    """The constants of the v20 rules. ``V20_TUNING`` is part of the recipe: changing it would
    change what every v20 log replays to, so a new set of constants needs a new recipe version."""

    growth: float  # c in B - c*sqrt(C*g*(B - P))
    floor: float  # the target is at least this share of B
    ceiling: float  # and at most this share
    head: float  # the head holds this share of what B leaves after S0 and the reserve
    reserve: int  # tokens of recent conversation the head leaves room for


V20_TUNING = Tuning(growth=0.020, floor=0.4, ceiling=0.8, head=0.30, reserve=8192)  # ADR 0150

# window-v21's trim-depth dial (ADR 0390): one setting from "keep more" (a smaller kept head and
# shallower trims: more of the recent conversation shown, more often re-sent) to "pay less" (a
# larger kept head and deeper, rarer trims: cheaper, less of the recent conversation shown). With
# ``scaled_cap`` a trim's depth also grows with the square root of the cap's growth (units.py).
# A recipe records its position (``Recipe.trim_depth``; None is the default position). Each
# position's constants are part of the recipe: changing one changes what its logs replay to.
DEFAULT_TRIM_DEPTH = "balanced"
TRIM_DEPTHS: dict[str, Tuning] = {
    "keep-more": Tuning(growth=0.018, floor=0.4, ceiling=0.8, head=0.20, reserve=8192),
    "balanced": Tuning(growth=0.020, floor=0.4, ceiling=0.8, head=0.30, reserve=8192),
    "pay-less": Tuning(growth=0.030, floor=0.4, ceiling=0.8, head=0.60, reserve=8192),
}
V21_TUNING = TRIM_DEPTHS[DEFAULT_TRIM_DEPTH]

# window-v22 (``wide_cap``, ADR 0460): a window whose result cap is wider than ``NARROW_CAP`` (from
# 32Ki up) trims with these constants instead; at 3,072 and below (16Ki) a position keeps its
# TRIM_DEPTHS constants. The balanced position's: a smaller head (0.27) and a shallower growth
# constant (times the cap's factor, ``units.cap_tuning``: 0.0209 at 32Ki, 0.0234 at 64Ki). Part of
# the recipe, like TRIM_DEPTHS.
NARROW_CAP = 3 * 1024
WIDE_TRIM_DEPTHS: dict[str, Tuning] = {
    "keep-more": TRIM_DEPTHS["keep-more"],
    "balanced": Tuning(growth=0.01814, floor=0.4, ceiling=0.8, head=0.27, reserve=8192),
    "pay-less": TRIM_DEPTHS["pay-less"],
}
V22_TUNING = WIDE_TRIM_DEPTHS[DEFAULT_TRIM_DEPTH]


def trim_depth_tuning(name: str | None) -> Tuning:
    """The v21 constants of a dial position (None: the default); anything else is refused."""
    tuning = TRIM_DEPTHS.get(DEFAULT_TRIM_DEPTH if name is None else name)
    if tuning is None:
        known = ", ".join(TRIM_DEPTHS)
        raise UnknownRecipeError(
            f"trim depth {name!r} is not a position of the trim-depth dial ({known}); "
            "upgrade nodwyn or pick one of those"
        )
    return tuning


@dataclass(frozen=True, slots=True, kw_only=True)
class Rules:
    """A recipe's rules resolved once (ADR 0250): one boolean per ``Flag``, named as the flag's
    value, and the v20 constants. The window, the agent and the stats read these fields; ``Flag``
    stays the vocabulary a recipe records. Build with ``Rules.of`` or ``Recipe.rules``."""

    version: int
    summaries: bool = False  # v2: revocable summaries replace eligible spans
    headers: bool = False  # v6: task/plan headers from the recipe
    tool_subsets: bool = False  # v7: no_tools / offered_tools
    output_cap: bool = False  # v8: max_output = output_reserve
    folds: bool = False  # v9: result.fold replaces a result's text
    headroom: bool = False  # v10: a request may pass high water up to the ceiling
    images: bool = False  # v12: attached images
    thinking: bool = False  # v14: a reply's thinking goes back on it
    in_conversation: bool = False  # v15: task and plan are user messages
    pairs: bool = False  # v16: trimming preserves tool-call pairs
    named_cuts: bool = False  # v17: cuts at line ends name the omitted lines
    blocks: bool = False  # v18: reasoning blocks go back with their reply
    wide_reads: bool = False  # v19: fs-read shown up to twice the cap
    units: bool = False  # v20: whole units elided oldest first, one marker per run
    growth: bool = False  # v20: the trim target follows the run's growth
    head: bool = False  # v20: the first units after the task are kept
    tuned: bool = False  # v21: the constants of the recipe's trim-depth dial position
    scaled_cap: bool = False  # v21: a fixed window's result cap grows with its budget
    wide_cap: bool = False  # v22: the cap is at least high water / 8, with its own trim constants
    shown_growth: bool = False  # v22: the growth rule's g counts results as the cap shows them (wide)
    kept_headers: bool = False  # a message keeps the header it was first shown under
    superseded: bool = False  # a summary a newer overlapping one superseded stays hidden (ADR 0300)
    tuning: Tuning = V20_TUNING  # the constants of units, growth and head
    wide_tuning: Tuning | None = None  # v22: the constants for a cap wider than NARROW_CAP

    @classmethod
    def of(
        cls,
        version: int,
        flags: Iterable[Flag],
        tuning: Tuning = V20_TUNING,
        wide_tuning: Tuning | None = None,
    ) -> Rules:
        """The rules of exactly these flags (a version's, or a measurement's own set)."""
        on = frozenset(flags)
        named: dict[str, Any] = {f.value: f in on for f in Flag}  # a field per flag, named as its value
        return cls(version=version, tuning=tuning, wide_tuning=wide_tuning, **named)

    def wide_at(self, cap: int) -> bool:
        """Whether a window whose result cap is ``cap`` trims by v22's wide rules (its wide
        constants, results counted as capped in the growth rule): a cap above NARROW_CAP."""
        return self.wide_tuning is not None and cap > NARROW_CAP

    def tuning_for(self, cap: int) -> Tuning:
        """The trim constants of a window whose result cap is ``cap`` (v22: its wide set above
        NARROW_CAP), before a scaled cap deepens the growth constant (``units.cap_tuning``)."""
        return self.wide_tuning if self.wide_tuning is not None and self.wide_at(cap) else self.tuning

    @property
    def flags(self) -> frozenset[Flag]:
        """The flags these rules have on (the inverse of ``of``)."""
        return frozenset(f for f in Flag if getattr(self, f.value))

    @property
    def unit_trim(self) -> bool:
        """Whether a trim is decided by the v20 rules (any of units, growth, head)."""
        return self.units or self.growth or self.head


@cache
def rules_for(version: int, extra_flags: tuple[Flag, ...] = (), trim_depth: str | None = None) -> Rules:
    """The rules of a known version plus a recipe's own flags and its dial position (v21 on);
    resolved once per triple."""
    flags = policy_for(version).flags | frozenset(extra_flags)
    if Flag.TUNED not in flags:
        if trim_depth is not None:
            raise UnknownRecipeError(
                f"window-v{version} has no trim-depth dial (trim_depth {trim_depth!r}); "
                "the dial is window-v21's and later: drop trim_depth or record window-v21 or later"
            )
        return Rules.of(version, flags)
    tuning = trim_depth_tuning(trim_depth)
    if Flag.WIDE_CAP not in flags:
        return Rules.of(version, flags, tuning)
    return Rules.of(version, flags, tuning, WIDE_TRIM_DEPTHS[trim_depth or DEFAULT_TRIM_DEPTH])


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowLimits:
    """Token sizes the session ran with (after sizing to the model's context)."""

    high_water: int
    low_water: int
    max_result_tokens: int
    output_reserve: int
    ceiling: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Recipe:
    version: int
    system: str
    tools: tuple[ToolSpec, ...]
    limits: WindowLimits
    context_size: int
    keep_alive: str | None = None
    task_header: str | None = None  # None means the default text
    plan_header: str | None = None
    extra_flags: tuple[Flag, ...] = ()  # flags of their own beside the version's (EXTRA_FLAGS)
    # The prices (by model entry) the session ran with, for its cost; None in logs written before
    # they were recorded. Not read by the window: no request depends on it (ADR 0180).
    prices: tuple[tuple[str, Prices], ...] | None = None
    weights: str | None = None  # an in-process model's weights ("sha256:…"); None for a server's
    # the trim-depth dial position of window-v21 and later (``TRIM_DEPTHS``); None: the default one
    # (ADRs 0390, 0460)
    trim_depth: str | None = None

    @property
    def rules(self) -> Rules:
        """The recipe's rules (its version's flags, its own, its dial), resolved once per kind."""
        return rules_for(self.version, self.extra_flags, self.trim_depth)
