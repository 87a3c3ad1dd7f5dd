"""The next request's price before it is sent (compaction/next_request.py): hand-computed figures
for a history with and without a response, a rewrite inside the cached prefix, a cold cache, a
summary that left only the system prompt and tools, unknown prices, and the typed prompt."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, strategies as st

from compaction import PipelineState
from compaction import cache_economics as ce
from compaction.accounting.cache_model import Rates
from compaction.entry import assistant, user
from compaction.layerkit import runtime
from compaction.next_request import KEYS, NextRequest, next_request

RATES = Rates.from_input(1.0, 5.0)   # $1/M input: read $0.1/M, 5m write $1.25/M, 1h $2/M
T0 = 1_700_000_000.0


def history(held: int = 40_000, answered: float = T0):
    a = assistant("the answer", response_id="msg_1",
                  usage={"input_tokens": 10, "cache_creation_input_tokens": 1_990,
                         "cache_read_input_tokens": held - 2_000, "output_tokens": 300})
    return [user("a question"), dataclasses.replace(a, timestamp=answered), user("the next question")]


def test_before_any_response_nothing_is_cached_and_warm_is_cold():
    nr = next_request([user("hi")], PipelineState(), tokens=5_000, now=T0, ttl="5m", rates=RATES)
    assert (nr.cached_tokens, nr.uncached_tokens, nr.cache_expires_in_s) == (0, 5_000, None)
    assert nr.usd_if_warm == nr.usd_if_cold == pytest.approx(5_000 * 1.25e-6)
    assert not nr.warm


def test_after_a_response_its_prefix_is_read_and_the_rest_written():
    nr = next_request(history(), PipelineState(), tokens=41_000, now=T0 + 60, ttl="5m", rates=RATES)
    assert (nr.tokens, nr.cached_tokens, nr.uncached_tokens) == (41_000, 40_000, 1_000)
    assert nr.usd_if_warm == pytest.approx(40_000 * 0.1e-6 + 1_000 * 1.25e-6)
    assert nr.usd_if_cold == pytest.approx(41_000 * 1.25e-6)
    assert nr.cache_expires_in_s == 240.0 and nr.warm
    one_hour = next_request(history(), PipelineState(), tokens=41_000, now=T0 + 60, ttl="1h", rates=RATES)
    assert one_hour.cache_expires_in_s == 3_540.0 and one_hour.usd_if_cold == pytest.approx(41_000 * 2e-6)


def test_the_cache_goes_cold_at_the_ttl():
    nr = next_request(history(), PipelineState(), tokens=41_000, now=T0 + 301, ttl="5m", rates=RATES)
    assert nr.cache_expires_in_s == 0.0 and not nr.warm
    assert nr.cached_tokens == 40_000        # what a warm cache would have read, priced in usd_if_warm


def test_a_rewrite_inside_the_prefix_leaves_only_what_comes_before_it():
    entries, state = history(), PipelineState()
    rt = runtime(state, ce.NAME)
    rt["broken_anchor"], rt["broken_at"] = entries[1].uuid, 12_000     # what note_rewrite leaves
    nr = next_request(entries, state, tokens=30_000, now=T0, ttl="5m", rates=RATES)
    assert (nr.cached_tokens, nr.uncached_tokens) == (12_000, 18_000)
    rt["broken_anchor"] = "another response"                            # an older rewrite: not this prefix
    assert next_request(entries, state, tokens=30_000, now=T0, ttl="5m", rates=RATES).cached_tokens == 30_000


def test_after_a_summary_only_the_system_prompt_and_tools_stay_cached():
    summary = [user("summary of the conversation"), user("go on")]
    nr = next_request(summary, PipelineState(), tokens=9_000, now=T0 + 10, ttl="5m", rates=RATES,
                      head_tokens=4_000, last_call_at=T0)
    assert (nr.cached_tokens, nr.uncached_tokens, nr.cache_expires_in_s) == (4_000, 5_000, 290.0)
    small = next_request(summary, PipelineState(), tokens=9_000, now=T0 + 10, ttl="5m", rates=RATES,
                         head_tokens=800, last_call_at=T0)
    assert small.cached_tokens == 0           # under the API's minimum cacheable prefix


def test_unknown_prices_give_no_dollars():
    nr = next_request(history(), PipelineState(), tokens=41_000, now=T0, ttl="5m", rates=None)
    assert nr.usd_if_warm is None and nr.usd_if_cold is None and nr.cached_tokens == 40_000
    assert nr.typed(500).usd_if_cold is None


def test_the_json_form_has_exactly_the_documented_keys():
    d = next_request(history(), PipelineState(), tokens=41_000, now=T0, ttl="5m", rates=RATES).to_dict()
    assert tuple(d) == KEYS == ("tokens", "cached_tokens", "uncached_tokens", "usd_if_warm", "usd_if_cold",
                                "cache_expires_in_s")


@given(st.integers(0, 200_000), st.integers(0, 200_000), st.integers(0, 50_000), st.floats(0, 4_000))
def test_typing_adds_written_tokens_and_time_only_counts_down(cached, uncached, extra, wait):
    tokens = cached + uncached
    nr = NextRequest(tokens, cached, uncached, round(cached * 0.1e-6 + uncached * 1.25e-6, 9),
                     round(tokens * 1.25e-6, 9), 300.0)
    typed = nr.typed(extra)
    assert (typed.tokens, typed.cached_tokens, typed.uncached_tokens) == (tokens + extra, cached, uncached + extra)
    if tokens and extra:
        assert typed.usd_if_cold == pytest.approx(nr.usd_if_cold + extra * 1.25e-6, rel=1e-6, abs=1e-8)
        assert typed.usd_if_warm - nr.usd_if_warm == pytest.approx(typed.usd_if_cold - nr.usd_if_cold, abs=1e-8)
    later = nr.later(wait)
    assert later.cache_expires_in_s == max(0.0, 300.0 - wait) and later.tokens == tokens
