"""`Pricer.rates`: the per-token rates the engine's cache model and replay price requests with."""
from __future__ import annotations

import pytest

from agent_core.pricing.cost import BUCKETS, price_buckets
from agent_core.pricing.pricer import Pricer

M = 1_000_000


@pytest.mark.parametrize("model,input_per_mtok", [("claude-sonnet-4", 3.0), ("claude-opus-4", 15.0)])
def test_rates_follow_the_models_prices(model, input_per_mtok):
    rates = Pricer().rates(model)
    assert rates is not None and set(rates) == set(BUCKETS)
    i = input_per_mtok / M
    assert rates["input"] == pytest.approx(i)
    assert rates["cache_write_5m"] == pytest.approx(1.25 * i)
    assert rates["cache_write_1h"] == pytest.approx(2.0 * i)
    assert rates["cache_read"] == pytest.approx(0.1 * i)
    assert rates["output"] == pytest.approx(5 * i)


def test_rates_price_a_request_like_price_buckets():
    rates = Pricer().rates("claude-sonnet-4")
    assert rates is not None
    usage = {"input": 1200, "output": 340, "cache_write_5m": 5000, "cache_write_1h": 700, "cache_read": 40_000}
    assert sum(rates[k] * usage[k] for k in BUCKETS) == pytest.approx(price_buckets("claude-sonnet-4", usage))


def test_unknown_model_has_no_rates():
    assert Pricer().rates("no-such-model-xyz") is None


def test_rates_are_a_copy():
    pricer = Pricer()
    first = pricer.rates("claude-sonnet-4")
    assert first is not None
    first["input"] = 99.0
    assert pricer.rates("claude-sonnet-4")["input"] != 99.0
