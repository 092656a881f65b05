"""Chat-completions server families are data: one profile per family, and no code outside the
table names a family."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from nodwyn.dialects import dialect_for
from nodwyn.dialects.profiles import CACHE_READS, PROFILES
from nodwyn.values.content import TextPart, UserMessage
from nodwyn.values.model import Family, ModelSettings
from nodwyn.values.request import Request

DIALECTS = Path(__file__).resolve().parents[2] / "src" / "nodwyn" / "dialects"
FAMILIES = set(get_args(Family))


def test_every_family_has_one_profile() -> None:
    assert set(PROFILES) == FAMILIES


@pytest.mark.parametrize(
    "path", [p for p in sorted(DIALECTS.rglob("*.py")) if p.name != "profiles.py"], ids=lambda p: p.name
)
def test_no_dialect_code_names_a_family(path: Path) -> None:
    """A family's difference lives in its profile, not in a comparison or a table keyed by name."""
    named = [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value in FAMILIES
    ]
    assert named == [], f"{path.name} names families {named}; put the difference in dialects/profiles.py"


def test_cache_reads_are_tried_in_the_order_replies_were_always_read() -> None:
    """The table's order decides which field wins when a reply holds several; it is the order the
    decoder used before the table existed."""
    assert CACHE_READS == (
        "usage.prompt_tokens_details.cached_tokens",
        "usage.prompt_cache_hit_tokens",
        "timings.cache_n",
    )


def _settings(family: Family) -> ModelSettings:
    return ModelSettings(name="m", api="openai-chat", model="m", context_size=8192, family=family)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_request_follows_the_profile(family: Family) -> None:
    profile = PROFILES[family]
    request = Request(
        system="s", messages=(UserMessage(parts=(TextPart(text="hi"),)),), tools=(), max_output=100
    )
    wire = dialect_for(_settings(family)).encode(request, _settings(family), session_key="k")
    assert wire.body[profile.max_output_field] == 100
    assert ("stream_options" in wire.body) is profile.stream_usage_option
    assert {h for h, v in wire.headers.items() if v == "k"} == set(profile.session_headers)
