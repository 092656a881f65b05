"""The prices a session ran with are recorded in its recipe, change no request
digest, round-trip through the codec, and cost the session whatever config.toml says later."""

from __future__ import annotations

from nodwyn.testing import SessionBuilder
from nodwyn.testing.session import recipe
from nodwyn.values import codec
from nodwyn.values.events import LlmResp
from nodwyn.values.model import Prices

from .conftest import totals_of

PRICES = (("m", Prices(input=2.0, output=8.0, cached_input=0.5)), ("free", Prices()))


def _session(prices: tuple[tuple[str, Prices], ...] | None) -> SessionBuilder:
    s = SessionBuilder(recipe(prices=prices), model="m")
    s.user("Fix the parser.")
    req = s.request()
    usage = {"prompt_tokens": 1000, "cached_tokens": 400, "output_tokens": 100}
    s.add(LlmResp.from_data({"req": req.seq, "response": {"text": "Done.", "usage": usage}}))
    s.user("And the tests?")
    s.request()
    return s


def test_recorded_prices_change_no_digest_and_round_trip() -> None:
    with_prices, without = _session(PRICES), _session(None)
    digests = [[e.data["digest"] for e in s.events if e.kind == "llm.req"] for s in (with_prices, without)]
    assert digests[0] == digests[1] and len(digests[0]) == 2
    assert with_prices.sent == without.sent
    start = with_prices.events[0].data["recipe"]
    assert start["prices"] == {
        "m": {"input": 2.0, "output": 8.0, "cached_input": 0.5},
        "free": {"input": 0.0, "output": 0.0},
    }
    assert "prices" not in without.events[0].data["recipe"]  # older recipes encode as they did
    assert codec.recipe_from_json(start).prices == tuple(sorted(PRICES))
    assert codec.recipe_to_json(codec.recipe_from_json(start)) == start


def test_a_session_is_costed_at_its_recorded_prices_not_the_configs() -> None:
    events = _session(PRICES).events
    now = {"m": Prices(input=200.0, output=800.0)}  # config.toml changed since
    recorded = totals_of(events, now).all
    want = (600 * 2.0 + 400 * 0.5 + 100 * 8.0) / 1e6
    assert abs(recorded.cost_usd - want) < 1e-12 and recorded.cost_unknown == 0
    legacy = totals_of(_session(None).events, now).all  # no prices recorded: config.toml's
    assert abs(legacy.cost_usd - (1000 * 200.0 + 100 * 800.0) / 1e6) < 1e-12
    assert totals_of(_session(None).events, {}).all.cost_unknown == 1
