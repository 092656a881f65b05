"""Chat-completions server families are data: one profile per family, and no code outside the
table names a family."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from nodwyn.dialects import API_PROFILES, dialect_for
from nodwyn.dialects.profiles import CACHE_READS, PROFILES
from nodwyn.values.content import TextPart, UserMessage
from nodwyn.values.model import Api, Family, ModelEntry
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


def _settings(family: Family) -> ModelEntry:
    return ModelEntry(name="m", api="openai-chat", model="m", context_size=8192, family=family)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_request_follows_the_profile(family: Family) -> None:
    profile = PROFILES[family]
    request = Request(
        system="s", messages=(UserMessage(parts=(TextPart(text="hi"),)),), tools=(), max_output=100
    )
    wire = dialect_for(_settings(family)).encode(request, session_key="k")
    assert wire.body is not None
    assert wire.body[profile.max_output_field] == 100
    assert ("stream_options" in wire.body) is profile.stream_usage_option
    assert {h for h, v in wire.headers.items() if v == "k"} == set(profile.session_headers)


# -- per-API profiles (issue 22) ----------------------------------------------------------------

SRC = DIALECTS.parent
APIS = set(get_args(Api))


def test_every_api_has_one_profile_and_each_wire_api_a_dialect() -> None:
    assert set(API_PROFILES) == APIS
    for api, profile in API_PROFILES.items():
        settings = ModelEntry(name="m", api=api, model="m", context_size=8192, base_url="http://x")
        if profile.in_process:
            assert profile.dialect is None
        else:
            assert dialect_for(settings).__class__ is profile.dialect


@pytest.mark.parametrize(
    "path",
    [p for p in sorted(SRC.rglob("*.py")) if not {"dialects", "fakes"} & set(p.relative_to(SRC).parts)],
    ids=lambda p: p.relative_to(SRC).as_posix(),
)
def test_no_code_above_the_dialects_branches_on_an_api(path: Path) -> None:
    """An API's difference lives in its profile (``dialects/apis.py``), not in a comparison with
    its name (the fakes are servers that each speak one API)."""
    branches = [
        node.lineno
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Compare)
        and any(
            (isinstance(o, ast.Attribute) and o.attr == "api")
            or (isinstance(o, ast.Name) and o.id == "api")
            or (isinstance(o, ast.Constant) and o.value in APIS - {"local"})
            for o in [node.left, *node.comparators]
        )
    ]
    assert branches == [], f"{path.name} lines {branches} branch on an api; read api_profile(settings)"
