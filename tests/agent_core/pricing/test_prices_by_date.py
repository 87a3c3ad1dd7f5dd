"""A request is priced at the prices of its date, with each model's long-context tier (issue 24)."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from agent_core.pricing.cost import BUCKETS, price_buckets, price_period
from agent_core.pricing.pricer import Pricer
from agent_core.pricing.tally import CostTally
from agent_core.pricing import rates_cache

MARCH_1 = datetime(2026, 3, 1, 12, tzinfo=timezone.utc).timestamp()     # Opus 4.6's long-context premium
JUNE_1 = datetime(2026, 6, 1, 12, tzinfo=timezone.utc).timestamp()      # after 2026-03-13: no premium
BIG = {**dict.fromkeys(BUCKETS, 0), "input": 2_000, "cache_read": 300_000, "output": 1_000}   # 302K input


def test_opus_4_6_above_200k_costs_its_dated_price():
    before, after = price_buckets("claude-opus-4-6", BIG, MARCH_1), price_buckets("claude-opus-4-6", BIG, JUNE_1)
    # before 2026-03-13 every bucket of a request above 200K doubles, output 1.5× (genai-prices' data)
    assert before == pytest.approx((2_000 * 10 + 300_000 * 1.0 + 1_000 * 37.5) / 1e6)
    assert after == pytest.approx((2_000 * 5 + 300_000 * 0.5 + 1_000 * 25) / 1e6)


def test_a_small_request_costs_the_same_on_both_dates():
    small = {**dict.fromkeys(BUCKETS, 0), "input": 1_000, "output": 100}
    assert price_buckets("claude-opus-4-6", small, MARCH_1) == pytest.approx(price_buckets("claude-opus-4-6", small))


def test_sonnet_4_has_its_long_context_tier():
    """genai-prices prices claude-sonnet-4-0 flat; Anthropic bills it 2× (output 1.5×) above 200K."""
    assert price_buckets("claude-sonnet-4-20250514", BIG) == pytest.approx(
        (2_000 * 6 + 300_000 * 0.6 + 1_000 * 22.5) / 1e6)
    small = {**dict.fromkeys(BUCKETS, 0), "input": 199_000, "output": 1_000}
    assert price_buckets("claude-sonnet-4-20250514", small) == pytest.approx((199_000 * 3 + 1_000 * 15) / 1e6)


def test_price_periods_meet_at_the_change():
    end = price_period("claude-opus-4-6", MARCH_1)[1]
    assert end == datetime(2026, 3, 13, tzinfo=timezone.utc).timestamp()
    assert price_period("claude-opus-4-6", JUNE_1) == (end, None)
    assert price_period("claude-sonnet-4-5", MARCH_1) == (None, None)      # one price for all time
    assert price_period("no-such-model", MARCH_1) == (None, None)


@pytest.mark.parametrize("when", [MARCH_1, JUNE_1, None])
def test_the_fast_pricer_prices_each_date_like_genai_prices(when):
    p = Pricer()
    for buckets in (BIG, {**dict.fromkeys(BUCKETS, 0), "input": 150_000, "output": 3_000}):
        assert p("claude-opus-4-6", buckets, when) == pytest.approx(price_buckets("claude-opus-4-6", buckets, when))


def test_rates_learned_on_one_date_are_not_used_on_another():
    p = Pricer()
    p("claude-opus-4-6", BIG, JUNE_1)
    assert p("claude-opus-4-6", BIG, MARCH_1) == pytest.approx(price_buckets("claude-opus-4-6", BIG, MARCH_1))
    assert len(p.learned()["claude-opus-4-6"]) == 2


def test_cached_periods_price_without_the_data(tmp_path):
    """usage keeps the periods between runs: the second run prices both dates without genai-prices."""
    first = Pricer()
    first("claude-opus-4-6", BIG, MARCH_1)
    first("claude-opus-4-6", BIG, JUNE_1)
    rates_cache.save(tmp_path / "r.json", "s", first.learned())
    known = rates_cache.load(tmp_path / "r.json", "s")

    def no_data(*a):
        raise AssertionError("the price data was read")

    cached = Pricer(price=lambda m, b, w: no_data() if sum(b.values()) <= 200_000 else price_buckets(m, b, w),
                    known=known, period=lambda m, w: no_data())
    small = {**dict.fromkeys(BUCKETS, 0), "input": 1_000, "output": 100}
    assert cached("claude-opus-4-6", small, MARCH_1) == pytest.approx(price_buckets("claude-opus-4-6", small, MARCH_1))
    assert cached("claude-opus-4-6", small, JUNE_1) == pytest.approx(price_buckets("claude-opus-4-6", small, JUNE_1))


def test_a_tally_prices_each_call_at_its_time():
    t = CostTally()
    t.add("claude-opus-4-6", {"input_tokens": 2_000, "cache_read_input_tokens": 300_000, "output_tokens": 1_000},
          when=MARCH_1)
    assert t.total_usd == pytest.approx(price_buckets("claude-opus-4-6", BIG, MARCH_1))
