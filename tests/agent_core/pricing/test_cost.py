"""Cost buckets and prices from genai-prices' offline data."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from agent_core.pricing import cost
from agent_core.pricing.cost import BUCKETS, price_buckets, usage_buckets
from agent_core.pricing.tally import CostTally, Tally, burn_rate
from agent_core.events import CostUpdate

M = 1_000_000


def test_usage_buckets_with_ttl_split():
    u = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 300,
         "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 200},
         "cache_read_input_tokens": 7}
    assert usage_buckets(u) == {"input": 10, "output": 5, "cache_write_5m": 100, "cache_write_1h": 200,
                                "cache_read": 7}


def test_usage_buckets_without_split_are_all_5m():
    u = {"input_tokens": 3, "output_tokens": 1, "cache_creation_input_tokens": 40, "cache_read_input_tokens": None}
    assert usage_buckets(u) == {"input": 3, "output": 1, "cache_write_5m": 40, "cache_write_1h": 0, "cache_read": 0}


def test_usage_buckets_split_smaller_than_total_keeps_rest_as_5m():
    u = {"cache_creation_input_tokens": 50, "cache_creation": {"ephemeral_1h_input_tokens": 20}}
    b = usage_buckets(u)
    assert (b["cache_write_5m"], b["cache_write_1h"]) == (30, 20)


def test_usage_buckets_tolerates_junk():
    b = usage_buckets({"input_tokens": "x", "output_tokens": -4, "cache_read_input_tokens": True,
                       "cache_creation": "nope"})
    assert b == dict.fromkeys(BUCKETS, 0)
    assert usage_buckets({}) == dict.fromkeys(BUCKETS, 0)
    assert usage_buckets(None) == dict.fromkeys(BUCKETS, 0)  # type: ignore[arg-type]


def test_usage_buckets_accepts_sdk_objects():
    from anthropic.types import Usage

    u = Usage(input_tokens=4, output_tokens=2, cache_creation_input_tokens=9, cache_read_input_tokens=1)
    assert usage_buckets(u) == {"input": 4, "output": 2, "cache_write_5m": 9, "cache_write_1h": 0, "cache_read": 1}


@pytest.mark.parametrize("model,input_price", [("claude-sonnet-4", 3.0), ("claude-opus-4", 15.0),
                                               ("claude-sonnet-4-20250514", 3.0)])
def test_bucket_multipliers(model, input_price):
    def p(bucket):      # dollars per million tokens, from a request below the long-context tier
        return price_buckets(model, {**dict.fromkeys(BUCKETS, 0), bucket: M // 10}) * 10

    assert p("input") == pytest.approx(input_price)
    assert p("cache_write_5m") == pytest.approx(1.25 * input_price)
    assert p("cache_write_1h") == pytest.approx(2.0 * input_price)
    assert p("cache_read") == pytest.approx(0.1 * input_price)
    assert p("output") == pytest.approx(5 * input_price)


def test_mixed_request_is_the_sum_of_its_parts():
    b = {"input": 1000, "output": 200, "cache_write_5m": 3000, "cache_write_1h": 4000, "cache_read": 50_000}
    expected = (1000 * 3 + 200 * 15 + 3000 * 3.75 + 4000 * 6 + 50_000 * 0.3) / M
    assert price_buckets("claude-sonnet-4", b) == pytest.approx(expected)


def test_agrees_with_genai_prices_extract_usage():
    """Our bucket mapping prices a real response exactly as genai-prices' own extractor does."""
    from genai_prices import extract_usage

    usage = {"input_tokens": 1234, "output_tokens": 567, "cache_creation_input_tokens": 3000,
             "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000},
             "cache_read_input_tokens": 40_000}
    theirs = extract_usage({"model": "claude-opus-4-1", "usage": usage}, provider_id="anthropic").calc_price()
    assert price_buckets("claude-opus-4-1", usage_buckets(usage)) == pytest.approx(float(theirs.total_price))


def test_1h_price_derived_when_the_data_has_none():
    model = "global.anthropic.claude-sonnet-4-20250514-v1:0"  # a Bedrock id: no 1-hour write price in the data
    _, info = cost.lookup_model(model)
    prices = info.get_prices(datetime.now(tz=timezone.utc))
    assert prices.cache_write_1h_mtok is None and prices.cache_write_mtok is not None
    one_h = price_buckets(model, {"cache_write_1h": M})
    assert one_h == pytest.approx(2 * float(prices.input_mtok))
    assert price_buckets(model, {"cache_write_5m": M}) == pytest.approx(float(prices.cache_write_mtok))


def test_tiered_model_priced_per_request():
    """Two 150k requests stay in the base tier even though together they exceed 200k."""
    t = CostTally()
    for _ in range(2):
        t.add("claude-sonnet-4-5", {"input_tokens": 150_000, "output_tokens": 0})
    assert t.total_usd == pytest.approx(2 * 150_000 * 3 / M)


def test_unknown_model_keeps_tokens_and_cost_is_none():
    assert price_buckets("no-such-model", {"input": 5}) is None
    t = CostTally()
    t.add("claude-sonnet-4", {"input_tokens": 100, "output_tokens": 10})
    t.add("no-such-model", {"input_tokens": 7, "output_tokens": 3})
    assert t.total_usd is None
    bm = t.by_model()
    assert bm["no-such-model"]["input"] == 7 and bm["no-such-model"]["output"] == 3
    assert bm["no-such-model"]["cost_usd"] is None
    assert bm["claude-sonnet-4"]["cost_usd"] == pytest.approx((100 * 3 + 10 * 15) / M)
    assert t.by_purpose()["main"]["cost_usd"] is None
    assert t.event().total_usd is None


def test_synthetic_is_free_and_known():
    assert price_buckets("<synthetic>", {"input": M, "output": M}) == 0.0
    t = CostTally()
    t.add("<synthetic>", {"input_tokens": 0, "output_tokens": 0})
    t.add("claude-sonnet-4", {"input_tokens": M // 10})
    assert t.total_usd == pytest.approx(0.3)
    assert t.by_model()["<synthetic>"]["cost_usd"] == 0.0


def test_price_buckets_never_raises():
    assert price_buckets("", {}) is None
    assert price_buckets("claude-sonnet-4", {"input": "junk"}) == 0.0  # type: ignore[dict-item]
    assert price_buckets(None, {"input": 1}) is None  # type: ignore[arg-type]


def test_tracker_by_purpose_and_cache_figures():
    t = CostTally()
    t.add("claude-sonnet-4", {"input_tokens": 1000, "output_tokens": 100, "cache_read_input_tokens": 9000,
                              "cache_creation_input_tokens": 0})
    t.add("claude-sonnet-4", {"input_tokens": 500, "output_tokens": 300, "cache_creation_input_tokens": 2000},
          purpose="compaction")
    t.add("claude-haiku-4-5", {"input_tokens": 100, "output_tokens": 20}, purpose="memory")
    bp = t.by_purpose()
    assert set(bp) == {"main", "compaction", "memory"}
    assert bp["compaction"]["cache_write_5m"] == 2000 and bp["compaction"]["output"] == 300
    assert bp["main"]["cost_usd"] == pytest.approx((1000 * 3 + 100 * 15 + 9000 * 0.3) / M)
    assert t.total_usd == pytest.approx(sum(v["cost_usd"] for v in bp.values()))
    assert t.total_usd == pytest.approx(sum(v["cost_usd"] for v in t.by_model().values()))
    assert t.cache_hit_rate() == pytest.approx(9000 / (1000 + 9000 + 500 + 2000 + 100))
    assert t.saved_by_cache_usd() == pytest.approx(9000 * (3 - 0.3) / M)


def test_empty_tracker():
    t = CostTally()
    assert t.total_usd == 0.0 and t.cache_hit_rate() == 0.0 and t.saved_by_cache_usd() == 0.0
    assert t.by_model() == {} and t.by_purpose() == {}


def test_saved_unknown_when_a_model_is_unknown():
    t = CostTally()
    t.add("mystery", {"input_tokens": 1, "cache_read_input_tokens": 100})
    assert t.saved_by_cache_usd() is None


def test_price_as_borrows_prices():
    t = CostTally(price_as={"demo": "claude-sonnet-4"})
    t.add("demo", {"input_tokens": M // 10})
    assert t.by_model()["demo"]["cost_usd"] == pytest.approx(0.3)


def test_round_trip_through_json():
    t = CostTally()
    t.add("claude-sonnet-4", {"input_tokens": 123, "output_tokens": 45, "cache_read_input_tokens": 6789,
                              "cache_creation_input_tokens": 1000,
                              "cache_creation": {"ephemeral_5m_input_tokens": 400, "ephemeral_1h_input_tokens": 600}})
    t.add("mystery", {"input_tokens": 1}, purpose="memory")
    t.add("claude-opus-4", {"input_tokens": 10, "output_tokens": 1}, purpose="compaction")
    back = CostTally.from_dict(json.loads(json.dumps(t.to_dict())))
    assert back.by_model() == t.by_model()
    assert back.by_purpose() == t.by_purpose()
    assert back.total_usd == t.total_usd
    assert back.saved_by_cache_usd() == t.saved_by_cache_usd()
    assert back.cache_hit_rate() == t.cache_hit_rate()
    # and keeps counting after a resume
    back.add("claude-opus-4", {"input_tokens": 10, "output_tokens": 1}, purpose="compaction")
    assert back.by_model()["claude-opus-4"]["input"] == 20


def test_from_dict_tolerates_garbage():
    assert CostTally.from_dict(None).total_usd == 0.0
    t = CostTally.from_dict({"models": {"x": {"tokens": {"input": "bad"}, "cost_usd": "nan?"}}, "purposes": 3})
    assert t.by_model()["x"]["input"] == 0 and t.total_usd is None


def test_event_shape():
    t = CostTally()
    t.add("claude-sonnet-4", {"input_tokens": 1, "output_tokens": 1})
    ev = t.event()
    assert isinstance(ev, CostUpdate)
    d = ev.to_dict()
    assert d["type"] == "cost" and set(BUCKETS) <= set(d["by_model"]["claude-sonnet-4"])
    assert "main" in d["by_purpose"]
    json.dumps(d)


def test_context_window_from_data():
    assert cost.context_window("claude-sonnet-4") == 200_000
    assert cost.context_window("no-such-model") is None


def test_demo_is_shown_at_a_real_models_prices_everywhere():
    from agent_core.pricing.cost import DEMO_PRICED_AS, shown_price
    from agent_core.pricing.pricer import Pricer

    b = {"input": 1_000, "output": 500, "cache_write_5m": 2_000, "cache_write_1h": 0, "cache_read": 10_000}
    assert price_buckets("demo", b) is None
    assert shown_price("demo", b) == price_buckets(DEMO_PRICED_AS, b) > 0
    assert Pricer()("demo", b) == pytest.approx(shown_price("demo", b))


def test_dollars_per_bucket_add_up_to_each_rows_cost():
    t = CostTally()
    t.add("claude-sonnet-4", {"input_tokens": 1000, "output_tokens": 200, "cache_read_input_tokens": 50_000,
                              "cache_creation_input_tokens": 3000})
    t.add("claude-sonnet-4", {"input_tokens": 10, "output_tokens": 900}, purpose="compaction")
    row = t.by_model()["claude-sonnet-4"]
    split = row["usd_by_bucket"]
    assert sum(split.values()) == pytest.approx(row["cost_usd"])
    assert split["output"] == pytest.approx(1100 * 15 / M)
    assert split["cache_read"] == pytest.approx(50_000 * 0.3 / M) and split["cache_write_1h"] == 0
    comp = t.by_purpose()["compaction"]
    assert comp["usd_by_bucket"]["output"] == pytest.approx(900 * 15 / M) and comp["requests"] == 1
    assert t.event().by_model["claude-sonnet-4"]["usd_by_bucket"] == split


def test_unknown_model_has_no_dollars_per_bucket():
    t = CostTally()
    t.add("no-such-model", {"input_tokens": 7})
    assert "usd_by_bucket" not in t.by_model()["no-such-model"]


def test_an_older_versions_state_resumes_without_a_split():
    old = {"version": 1, "models": {"claude-sonnet-4": {"tokens": {"input": 1000}, "calls": 1,
                                                        "cost_usd": "0.003", "saved_usd": "0"}},
           "purposes": {"main": {"tokens": {"input": 1000}, "calls": 1, "cost_usd": "0.003", "saved_usd": "0"}}}
    t = CostTally.from_dict(old)
    assert t.total_usd == pytest.approx(0.003) and t.saved_by_cache_usd() == 0.0
    assert "usd_by_bucket" not in t.by_model()["claude-sonnet-4"]      # unknown, not guessed
    t.add("claude-sonnet-4", {"input_tokens": 1000})
    assert t.total_usd == pytest.approx(0.006) and t.calls() == 2


def test_a_call_taken_back_out_leaves_nothing_to_show():
    t = CostTally()
    b = {"input": 100, "output": 1, "cache_write_5m": 0, "cache_write_1h": 0, "cache_read": 0}
    t.add_buckets("claude-sonnet-4", b, "subagent")
    t.add_buckets("claude-sonnet-4", b, "subagent", sign=-1)
    assert t.by_model() == {} and t.by_purpose() == {} and t.total_usd == 0.0


def test_a_non_finite_cost_is_written_as_null_never_as_infinity():
    from agent_core.pricing.pricer import Priced

    t = Tally()
    t.add({"input": 1}, Priced(float("inf"), None, 0.0))
    d = t.report_dict()
    assert d["cost_usd"] is None
    json.dumps(d, allow_nan=False)


def test_burn_rate():
    assert burn_rate(2.0, 0.0, 7200.0) == pytest.approx(1.0)
    assert burn_rate(2.0, 0.0, 30.0) is None              # under a minute says nothing
    assert burn_rate(None, 0.0, 7200.0) is None and burn_rate(1.0, None, 5.0) is None
