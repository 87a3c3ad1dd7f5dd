"""The cache-economics rule: hand-computed verdicts, and the rule applied by microcompact and collapse."""
from __future__ import annotations

import pytest

from compaction import ContextBudget, Entry, PipelineConfig, PipelineState, count_tokens, tool_result_block
from compaction import cache_economics as ce
from compaction.layers import collapse, snip
from compaction.layers import microcompact as mc
from compaction.accounting.cache_model import Rates
from compaction.layer_context import LayerContext
from compaction.layerkit import collapsed_ranges
from tests.compaction import collapse_helpers, snip_helpers

RATES = Rates.from_input(1.0, 5.0)   # $1 per million input tokens: read $0.1/M, 5m write $1.25/M, 1h $2/M
T0 = 1_700_000_000.0


def v(**kw) -> ce.Verdict:
    args = dict(warm_tokens=100_000, readable_tokens=5_000, freed=10_000, tokens_now=110_000, threshold=167_000,
                rates=RATES, ttl="5m", growth=2_000.0)
    args.update(kw)
    return ce.verdict(**args)


def test_a_warm_rewrite_costs_writes_minus_the_reads_it_replaces():
    got = v()
    # R0 − R1 = 95,000 read today; acting writes 85,000 of them: 85,000·1.25 − 95,000·0.1 = 96,750 µ$
    assert got.rewrite_tokens == 85_000
    assert got.cost_usd == pytest.approx(0.09675)
    assert got.saves_per_call_usd == pytest.approx(0.001)           # 10,000 · 0.1 µ$
    assert got.payback_calls == pytest.approx(96.75)
    # room after acting: 167,000 − 100,000 = 67,000 → 33 calls at 2,000 per call, capped at 50
    assert got.calls_ahead == 33
    assert (got.act, got.reason) == (False, "waits")


def test_a_one_hour_cache_makes_the_rewrite_dearer():
    assert v(ttl="1h").cost_usd == pytest.approx(85_000 * 2e-6 - 95_000 * 0.1e-6)


def test_a_cold_cache_makes_the_rewrite_free():
    got = v(cold=True)
    assert (got.act, got.reason, got.rewrite_tokens) == (True, "cold", 0)
    assert got.cost_usd == pytest.approx(-10_000 * 1.25e-6)   # the next call writes x fewer tokens
    assert got.payback_calls == 0.0
    assert ce.describe(got) == "cache cold: rewrite free; saves $0.001 per call"


def test_no_warm_prefix_at_all_counts_as_cold():
    assert v(warm_tokens=0).reason == "cold"


def test_freeing_most_of_what_is_rewritten_pays_within_the_calls_ahead():
    got = v(warm_tokens=50_000, readable_tokens=0, freed=40_000, tokens_now=60_000)
    # 10,000·1.25 − 50,000·0.1 = 7,500 µ$; saves 4,000 µ$ a call → 1.9 calls
    assert got.cost_usd == pytest.approx(0.0075) and got.payback_calls == pytest.approx(1.875)
    assert (got.act, got.reason) == (True, "pays")
    assert ce.describe(got) == "rewrote 10k cached tokens, $0.0075; saves $0.004 per call; pays back in 2 calls"


@pytest.mark.parametrize("calls, said", [(0.3, "; pays back with the next call"),
                                         (1.0, "; pays back with the next call"), (1.01, "; pays back in 2 calls"),
                                         (12.5, "; pays back in 13 calls"),
                                         (0.0, ""), (None, "")])
def test_payback_is_said_in_whole_calls_never_zero(calls, said):
    """A payback under one call was said as "pays back in 0 call(s)"."""
    assert ce._payback(calls) == said


def test_a_rewrite_that_frees_everything_it_breaks_pays_at_once():
    got = v(warm_tokens=20_000, readable_tokens=15_000, freed=5_000, tokens_now=21_000)
    assert got.rewrite_tokens == 0 and got.cost_usd < 0 and got.payback_calls == 0.0
    assert got.act and got.reason == "pays"


def test_at_the_threshold_a_rewrite_cheaper_than_the_summary_it_puts_off_prevents_it():
    s_usd, s_frees = ce.summary_estimate(167_000, RATES, "5m")
    # out 5,010; kept 5,010 + 25,050; 167,000·0.1 + 1,000·1.25 + 5,010·5 + 30,060·1.25 µ$
    assert s_usd == pytest.approx((16_700 + 1_250 + 25_050 + 37_575) / 1e6) and s_frees == 136_940
    near = dict(tokens_now=168_000, warm_tokens=160_000, summary_usd=s_usd, summary_frees=s_frees)
    small = v(**near)              # frees 10,000 of 160,000: far dearer than a summary's share
    assert (small.act, small.reason) == (False, "waits")
    big = v(**near, freed=90_000)  # frees 90,000: (160,000 − 5,000 − 90,000)·1.25 − 155,000·0.1 µ$
    assert big.cost_usd == pytest.approx(0.06575)
    assert ce.MARGIN * big.cost_usd <= big.saves_per_call_usd * big.calls_ahead + s_usd * 90_000 / s_frees
    assert (big.act, big.reason) == (True, "prevents_summary")
    assert "keeps the count under the auto-compact threshold" in ce.describe(big)


def test_always_prevent_summary_acts_at_the_threshold_whatever_it_costs():
    got = v(tokens_now=168_000, warm_tokens=160_000, always_prevent_summary=True)
    assert (got.act, got.reason) == (True, "prevents_summary") and got.cost_usd > 0
    # one call of growth short of it counts too; further away it waits
    assert v(tokens_now=165_500, warm_tokens=160_000, always_prevent_summary=True).reason == "prevents_summary"
    assert v(tokens_now=160_000, warm_tokens=155_000, always_prevent_summary=True).reason == "waits"


def test_at_the_threshold_a_rewrite_too_small_to_get_under_it_waits():
    got = v(tokens_now=190_000, warm_tokens=180_000, freed=5_000)
    assert got.calls_ahead == 0 and (got.act, got.reason) == (False, "waits")


def test_nothing_freed_never_acts_and_bad_figures_are_refused():
    assert not v(freed=0).act and not v(freed=0, cold=True).act
    with pytest.raises(ValueError, match=">= 0"):
        v(freed=-1)


def test_calls_ahead_is_the_room_over_the_growth_capped():
    assert ce.calls_ahead(tokens_now=100, freed=0, threshold=1_100, growth=100) == 10
    assert ce.calls_ahead(tokens_now=100, freed=0, threshold=1_100, growth=0) == ce.CALLS_AHEAD_CAP
    assert ce.calls_ahead(tokens_now=100, freed=0, threshold=1_000_000, growth=1) == ce.CALLS_AHEAD_CAP
    assert ce.calls_ahead(tokens_now=2_000, freed=500, threshold=1_000, growth=10) == 0


# ----- the rule applied: microcompact -------------------------------------------------------------

BUDGET = ContextBudget(60_000, 8_000)   # E 54,000, threshold 50,100; count trigger 27,000, batch 2,700


def history(task_chars: int, prompt_after_bash: bool = True) -> list[Entry]:
    """8 bash rounds of ~1,000-token results (compactable), then (a new user prompt and) 12 rounds
    of a tool microcompact never clears, with results of `task_chars`: the bash results lie deep in
    the cached prefix, before the current task. The last response's usage equals the estimates
    before it, so real and estimated tokens agree."""
    es = [Entry({"role": "user", "content": [{"type": "text", "text": "start"}]}, timestamp=T0)]
    tools = ["bash"] * 8 + ["task"] * 12
    for r, name in enumerate(tools):
        body = f"{r}:" + ("o" * 4_000 if name == "bash" else "t" * task_chars)
        es.append(Entry({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{r}", "name": name, "input": {"command": "x"}}]}, response_id=f"m{r}",
            timestamp=T0 + 10 * r))
        content = [tool_result_block(f"t{r}", body)]
        if r == 7 and prompt_after_bash:
            content.append({"type": "text", "text": "good; now run the task tool on every module"})
        es.append(Entry({"role": "user", "content": content}, timestamp=T0 + 10 * r + 1))
    a = es[-2]
    es[-2] = Entry(a.message, uuid=a.uuid, response_id=a.response_id, timestamp=a.timestamp,
                   usage={"input_tokens": sum(e.tokens for e in es[:-2]), "output_tokens": a.tokens})
    return es


def ctx(es: list[Entry], gap: float = 5.0, budget: ContextBudget = BUDGET, **cfg) -> LayerContext:
    return LayerContext(PipelineConfig(budget=budget, **cfg), PipelineState(), None, es[-2].timestamp + gap,
                        count_tokens(es))


def cleared(es: list[Entry]) -> list[str]:
    return [b["tool_use_id"] for e in es for b in e.content
            if b.get("type") == "tool_result" and str(b.get("content")).startswith("[Old result")]


def test_a_warm_cache_with_room_below_the_threshold_is_not_rewritten():
    es = history(task_chars=7_000)
    c = ctx(es, micro_keep_share=0.0)            # the keep window by count: the last five bash results
    assert 27_000 <= c.tokens < 50_100 - 3_000   # above the count trigger, far from the threshold
    res = mc.apply(es, c)
    assert res.report is None and res.entries is es
    # the same history and config with the cache rule off: the token-only trigger clears t0-t2
    assert cleared(mc.apply(es, ctx(es, cache_aware=False, micro_keep_share=0.0)).entries) == ["t0", "t1", "t2"]


def test_the_same_history_after_the_ttl_is_rewritten_for_free():
    es = history(task_chars=7_000)
    res = mc.apply(es, ctx(es, gap=301.0))
    assert res.report is not None and res.report.trigger == "time"
    assert res.report.details["cache"]["reason"] == "cold" and res.report.details["cache"]["rewrite_tokens"] == 0
    assert cleared(res.entries) == ["t0", "t1", "t2"]
    # the count-based trigger alone (time-based off; its keep window by count) takes the same free rewrite
    res = mc.apply(es, ctx(es, gap=301.0, time_based_enabled=False, micro_keep_share=0.0))
    assert res.report.trigger == "auto" and res.report.details["cache"]["reason"] == "cold"


def test_results_of_the_current_task_are_priced_as_read_again():
    """Issue 25: the same bash results, read since the latest prompt (the task at hand), are
    certain to be needed again, where older command output is charged a tenth of that; past a
    price the free cold rewrite does not cover, it waits."""
    es = history(task_chars=7_000, prompt_after_bash=False)
    task = mc.apply(es, ctx(es, gap=301.0)).report.details["cache"]
    older = history(task_chars=7_000)
    old = mc.apply(older, ctx(older, gap=301.0)).report.details["cache"]
    assert old["lost_tokens"] == task["lost_tokens"] > 2_000
    assert task["reread_usd"] == pytest.approx(old["reread_usd"] / ce.REUSE_OTHER, rel=0.01)
    # the rule itself: a re-read charge past what acting saves makes a warm and a cold rewrite wait
    args = dict(warm_tokens=40_000, readable_tokens=30_000, freed=10_000, tokens_now=40_000, threshold=50_000,
                rates=Rates.from_input(3.0, 15.0), ttl="5m", growth=1_000.0)
    for cold in (False, True):
        free = ce.verdict(cold=cold, **args)
        assert free.act
        dear = ce.verdict(cold=cold, lost=ce.Reread(usd=1.0, tokens=10_000), **args)
        assert not dear.act and dear.reason == "waits" and dear.reread_usd == 1.0
    # at the threshold the alternative is a summary, which loses more: the charge is said, not weighed
    at = ce.verdict(cold=True, lost=ce.Reread(usd=1.0, tokens=10_000), **{**args, "tokens_now": 49_500})
    assert at.act and at.reread_usd == 1.0


def test_at_the_threshold_it_rewrites_to_prevent_a_summary_only_when_that_is_cheaper():
    es = history(task_chars=14_000)
    c = ctx(es, micro_keep_share=0.0)            # the keep window by count: the last five bash results
    c.summarizing = True
    threshold = BUDGET.autocompact_threshold
    assert threshold - 1_000 <= c.tokens < threshold + 2_500   # at the threshold; clearing 3 results gets under
    # freeing 3,000 tokens by rewriting 44,000 costs more than the share of a summary it puts off
    assert mc.apply(es, c).report is None
    res = mc.apply(es, ctx(es, always_prevent_summary=True, micro_keep_share=0.0))
    assert res.report is not None and res.report.trigger == "auto"
    cache = res.report.details["cache"]
    assert cache["reason"] == "prevents_summary" and cache["cost_usd"] > 0 and cache["rewrite_tokens"] > 30_000
    assert res.report.tokens_after < threshold
    assert "keeps the count under the auto-compact threshold" in res.report.action
    assert "rewrote " in res.report.action and " cached tokens, $" in res.report.action


# ----- the rule applied: context collapse -----------------------------------------------------------

def collapse_session(usage: int) -> list[Entry]:
    return collapse_helpers.session(40, usage=usage)   # BUDGET too: commit at 48,600, threshold 50,100


def collapse_ctx(es: list[Entry], state: PipelineState, gap: float) -> LayerContext:
    return LayerContext(PipelineConfig(budget=BUDGET), state, None, es[-2].timestamp + gap, count_tokens(es))


def test_collapse_waits_on_a_warm_cache_below_the_threshold_and_commits_once_cold():
    es = collapse_session(usage=48_000)
    state = PipelineState()
    c = collapse_ctx(es, state, gap=5.0)
    assert 48_600 <= c.tokens < BUDGET.autocompact_threshold - 1_000
    res = collapse.apply(es, c)
    assert res.report is None and res.entries is es and not state.of("collapse").get("spans")
    again = collapse.apply(es, collapse_ctx(es, state, gap=6.0))   # still waiting
    assert again.report is None
    cold = collapse.apply(es, collapse_ctx(es, state, gap=301.0))
    assert cold.report is not None and cold.report.details["cache"]["reason"] == "cold"
    assert "cache cold: rewrite free" in cold.report.action and state.of("collapse")["spans"]


def test_collapse_commits_at_the_threshold_to_prevent_a_summary():
    # a digest keeps every user instruction verbatim, so collapse stands in for a summary at the
    # threshold even when its rewrite costs more than the summary would (microcompact does not)
    es = collapse_session(usage=50_000)
    c = collapse_ctx(es, PipelineState(), gap=5.0)
    c.summarizing = True
    res = collapse.apply(es, c)
    assert res.report is not None
    cache = res.report.details["cache"]
    assert cache["reason"] == "prevents_summary" and cache["rewrite_tokens"] > 0 and cache["cost_usd"] > 0
    assert res.report.tokens_after < BUDGET.autocompact_threshold


# ----- snip: not held back, but priced ----------------------------------------------------------------

def test_snip_reports_what_its_rewrite_cost(tmp_path):
    es = snip_helpers.session(80)
    warm = LayerContext(PipelineConfig(budget=BUDGET), PipelineState(), tmp_path, es[-2].timestamp + 5,
                        count_tokens(es))
    res = snip.apply(es, warm)
    assert res.report is not None
    cache = res.report.details["cache"]
    assert set(cache) == {"reason", "rewrite_tokens", "cost_usd", "saves_per_call_usd", "payback_calls"}
    # the head round is deep in the prefix: everything after the system prompt is written again,
    # less what was snipped
    held = es[-2].usage["input_tokens"]
    assert cache["rewrite_tokens"] == held - res.report.freed
    assert cache["reason"] == "prevents_summary"
    assert f"rewrote {round(cache['rewrite_tokens'] / 1000)}k cached tokens, $" in res.report.action


def test_a_commit_on_a_warm_cache_buys_more_room_than_a_free_one():
    es = collapse_session(usage=50_000)
    warm = collapse.apply(es, collapse_ctx(es, PipelineState(), gap=5.0)).report
    cold = collapse.apply(es, collapse_ctx(es, PipelineState(), gap=301.0)).report
    assert warm.details["cache"]["reason"] == "prevents_summary" and cold.details["cache"]["reason"] == "cold"
    # warm: down to collapse_warm_target_ratio (0.4) of E, as estimates; cold: to 0.75 only
    assert warm.details["spans"] > cold.details["spans"] and warm.tokens_after < cold.tokens_after
    off = collapse_ctx(es, PipelineState(), gap=5.0)
    off.config.cache_aware = False   # the token-only rules: the usual target, warm or not
    assert collapse.apply(es, off).report.details["spans"] == cold.details["spans"]


def test_microcompact_does_not_pay_to_clear_results_collapse_already_hides():
    es = collapse_session(usage=50_000)
    state = PipelineState()
    assert collapse.apply(es, collapse_ctx(es, state, gap=301.0)).report is not None   # spans committed
    hidden = collapsed_ranges(es, state)
    assert hidden
    results = [i for i, e in enumerate(es) if any(b.get("type") == "tool_result" for b in e.content)]
    shown = [i for i in results if not any(a <= i < b for a, b in hidden)]
    # keep every shown result: what is left to clear lies only inside collapsed spans
    c = LayerContext(PipelineConfig(budget=BUDGET, micro_keep_recent=len(shown) - 1, micro_clear_at_least_ratio=0.0),
                     state, None, es[-2].timestamp + 5.0, count_tokens(es))
    assert mc.apply(es, c).report is None
    c.config.cache_aware = False   # the token-only rule clears them, for nothing the request shows
    assert mc.apply(es, c).report is not None
