"""When replacing the history by the session notes pays in dollars (issue 13): the rule on
hand-computed cases, its switch point against a brute-force search of the cheapest steady state,
and the pipeline acting on it under the auto-compact threshold (warm: only when it pays; cold: once
the context is large against what compaction leaves) with the verdict in its report."""
from __future__ import annotations

import asyncio

import pytest

from compaction import (ContextBudget, Entry, Pipeline, PipelineConfig, SummarizeConfig, default_stages,
                        tool_result_block)
from compaction import cache_economics as ce
from compaction.accounting.cache_model import Rates
from compaction.layers.session_memory import SessionMemoryStage

from tests.compaction.autocompact_helpers import ScriptedSummarizer

RATES = Rates.from_input(3.0, 15.0)     # read $0.30/M, 5m write $3.75/M
R, W = 0.3e-6, 3.75e-6
T0 = 1_700_000_000.0


def cv(**kw) -> ce.Verdict:
    args = dict(tokens_now=60_000, after_tokens=20_000, head_tokens=10_000, warm_tokens=60_000, rates=RATES,
                ttl="5m", growth=2_000.0, cold=False)
    args.update(kw)
    return ce.compaction_verdict(**args)


def test_a_warm_compaction_costs_the_new_body_written_minus_the_reads_it_replaces():
    got = cv()
    # writes 10,000 (A − H) instead of reading 50,000 (R0 − H); then reads 40,000 fewer per call
    assert got.rewrite_tokens == 10_000
    assert got.cost_usd == pytest.approx(10_000 * W - 50_000 * R)
    assert got.saves_per_call_usd == pytest.approx(40_000 * R)
    assert got.calls_ahead == 10                            # half a cycle: 40,000 / (2 × 2,000)
    assert got.act and got.reason == "pays"


def test_a_warm_compaction_that_frees_little_waits():
    got = cv(tokens_now=25_000, warm_tokens=25_000)
    # cost 10,000·W − 15,000·R = $0.033 against 5,000·R saved over 1.25 calls
    assert got.cost_usd == pytest.approx(10_000 * W - 15_000 * R)
    assert not got.act and got.reason == "waits"


def test_a_cold_cache_compacts_once_the_context_is_twice_the_compacted_body():
    small = cv(tokens_now=25_000, cold=True)
    assert not small.act                                  # frees 5,000 < the body of 10,000
    big = cv(tokens_now=35_000, cold=True)
    assert big.act and big.reason == "cold" and big.rewrite_tokens == 0
    assert big.cost_usd == pytest.approx(-15_000 * W)    # it writes 15,000 fewer tokens at once
    # nothing warm beyond the head is the same as cold
    assert cv(tokens_now=35_000, warm_tokens=9_000).reason == "cold"


def test_nothing_freed_never_acts_and_bad_figures_are_refused():
    assert not cv(tokens_now=20_000, warm_tokens=20_000).act
    assert not cv(tokens_now=15_000, warm_tokens=15_000, cold=True).act
    with pytest.raises(ValueError):
        cv(after_tokens=-1)
    with pytest.raises(ValueError):
        cv(fixed_usd=-0.1)


def test_a_model_call_makes_the_compaction_wait_longer():
    # frees 40,000: costs 10,000·W − 50,000·R = $0.0225 (×3 margin: $0.0675) against 40,000·R over 10 calls = $0.12
    assert cv().act
    assert not cv(fixed_usd=0.05).act


def test_a_warm_compaction_must_pay_three_times_over():
    """The margin the other layers use (issue 25): frees 30,000 at $0.0255 against $0.0675 over
    7.5 calls pays 2.6 times over, not 3: it waits."""
    assert not cv(tokens_now=50_000, warm_tokens=50_000).act
    assert ce.MARGIN == 3.0


def test_what_the_agent_would_read_again_is_a_cost():
    lost = ce.Reread(usd=0.2, tokens=20_000, task_tokens=0)
    got = cv(lost=lost)                       # $0.0675 + $0.20 > $0.12
    assert not got.act and got.reread_usd == 0.2 and got.details()["lost_tokens"] == 20_000
    assert got.details()["calls_ahead"] == 10 and "re-reads expected $0.2 (20k tokens of results)" in ce.describe(got)
    # cold: the rewrite is free (it writes 15,000 fewer tokens, $0.056), the re-reads are not
    assert cv(tokens_now=35_000, cold=True).act and not cv(tokens_now=35_000, cold=True, lost=lost).act


def _cycle_cost_per_call(x: int, a: int, h: int, g: int) -> float:
    """Dollars per call of compacting each time the context reached a + x: every call reads the
    warm context and writes its growth; the call after a compaction writes a − h instead."""
    n = max(1, x // g)
    reads = sum((a + i * g) * R for i in range(n))
    compaction = (a - h) * W - (a + x - h) * R        # the extra of the call after it
    return (reads + compaction) / n


@pytest.mark.parametrize("a,g", [(20_000, 2_000), (40_000, 1_000), (15_000, 4_000)])
def test_the_switch_point_is_the_cheapest_steady_state(a, g):
    """Sweeping the context upwards, the rule first acts at an excess above the one a brute-force
    search finds cheapest per call (the 3x margin: later, never sooner, within twice it), and
    acting there costs within 5% of the best: the optimum is flat."""
    h = 10_000
    first = next(x for x in range(0, 400_000, 100)
                 if cv(tokens_now=a + x, after_tokens=a, head_tokens=h, warm_tokens=a + x, growth=float(g)).act)
    best = min(range(g, 400_000, g), key=lambda x: _cycle_cost_per_call(x, a, h, g))
    assert best - 2 * g <= first <= 2 * best, (first, best)
    # and acting there costs within 5% of the best steady state (calls come in whole steps of g)
    assert _cycle_cost_per_call(first // g * g or g, a, h, g) <= 1.05 * _cycle_cost_per_call(best, a, h, g)


# ----- the pipeline: session memory under the threshold -------------------------------------------

WINDOW = 200_000


def grown(rounds: int, *, gap: float = 10.0, last_gap: float = 10.0, tool: str = "read_file") -> list[Entry]:
    """A session of rounds (a prompt, a read of ~2,000 tokens, an answer); the last answer carries
    the usage of its request, so the count is anchored like a live one."""
    es: list[Entry] = []
    t = T0
    for r in range(rounds):
        es.append(Entry({"role": "user", "content": [{"type": "text", "text": f"Request {r}: look at src/m{r}.py"}]},
                        timestamp=t))
        es.append(Entry({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{r}", "name": tool, "input": {"path": f"src/m{r}.py"}}]},
            response_id=f"a{r}", timestamp=t + 1))
        es.append(Entry({"role": "user", "content": [tool_result_block(f"t{r}", f"# m{r}\n" + "x" * 8_000)]},
                        timestamp=t + 2))
        es.append(Entry({"role": "assistant", "content": [{"type": "text", "text": f"m{r} is fine."}]},
                        response_id=f"b{r}", timestamp=t + 3))
        t += gap
    a = es[-1]
    es[-1] = Entry(a.message, uuid=a.uuid, response_id=a.response_id, timestamp=a.timestamp,
                   usage={"input_tokens": 12_000 + sum(e.tokens for e in es[:-1]), "output_tokens": a.tokens})
    es.append(Entry({"role": "user", "content": [{"type": "text", "text": "And the next one, please."}]},
                    timestamp=a.timestamp + last_gap))
    return es


# the early tail before issue 49: tests of the verdict itself keep the switch points they were worked out on
SHORT_EARLY_TAIL = SummarizeConfig(sm_early_min_tokens=2_000, sm_early_max_tokens=10_000)


def pipeline(tmp_path, summarize: SummarizeConfig | None = None, **cfg) -> Pipeline:
    config = PipelineConfig(budget=ContextBudget(context_window=WINDOW), overhead_tokens=12_000, **cfg)
    stages = [SessionMemoryStage(summarize or SummarizeConfig())]
    return Pipeline(config, tmp_path, stages, layers=([], []))


def run(p: Pipeline, es: list[Entry], now: float):
    return asyncio.run(p.run(es, now=now))


def test_under_the_threshold_a_warm_cache_is_compacted_only_when_it_pays(tmp_path):
    """The verdict on the early tail of 2,000-10,000 tokens (SHORT_EARLY_TAIL, the default before
    issue 49), which the figures below were worked out on; the default tail is tested in
    test_under_the_threshold_the_verbatim_tail_is_the_same_as_at_it."""
    small = grown(6)                                # ~24k: compacting would leave ~16k, and on a warm cache
                                                    # the rewrite would not pay back before the next one
    p = pipeline(tmp_path, SHORT_EARLY_TAIL)
    res = run(p, small, small[-1].timestamp + 5)
    assert not res.reports and res.entries is small

    big = grown(50)                                 # ~114k, far under the threshold of 167k (at 40 rounds, with
                                                    # the five files re-attached, re-reads outweigh the saving)
    p = pipeline(tmp_path, SHORT_EARLY_TAIL)
    before = p.count(big)
    assert before < p.config.budget.autocompact_threshold
    res = run(p, big, big[-1].timestamp + 5)
    [rep] = [r for r in res.reports if r.layer == "session_memory"]
    cache = rep.details["cache"]
    assert rep.details["early"] and cache["reason"] == "pays" and "because it pays" in rep.action
    assert res.tokens < before / 2
    assert cache["cost_usd"] < cache["saves_per_call_usd"] * ce.CALLS_AHEAD_CAP
    # every request of the session is still there word for word
    text = "\n".join(e.text() for e in res.entries)
    assert all(f"Request {r}: look at src/m{r}.py" in text for r in range(50))
    # the five files read last come back whole, and their reads are not priced as lost
    files = rep.details["files"]
    newest = int(files[0][5:-3])                       # the newest read the tail does not already show
    assert files == [f"src/m{r}.py" for r in range(newest, newest - 5, -1)] and newest >= 45
    attached = [e.text() for e in res.entries if e.kind == "attachment"]
    assert [f"# m{r}\n" in a for r, a in zip(range(newest, newest - 5, -1), attached)] == [True] * 5
    assert cache["lost_tokens"] < sum(e.tokens for e in big if e.role == "user")


def test_a_cold_cache_compacts_a_context_that_would_wait_on_a_warm_one(tmp_path):
    """On the short early tail (SHORT_EARLY_TAIL): ~24k is twice what it leaves. With the default
    one (issue 49) the same holds from 11 rounds of command output, 34k."""
    es = grown(6, tool="bash")              # command output: unlikely to be needed again
    warm = run(pipeline(tmp_path / "warm", SHORT_EARLY_TAIL), es, es[-1].timestamp + 5)
    assert not warm.reports
    cold = run(pipeline(tmp_path / "cold", SHORT_EARLY_TAIL), es, es[-1].timestamp + 400)     # over the 5-minute TTL
    [rep] = [r for r in cold.reports if r.layer == "session_memory"]
    assert rep.details["cache"]["reason"] == "cold" and rep.tokens_after < rep.tokens_before


def test_files_the_agent_read_are_priced_as_read_again(tmp_path):
    """File reads instead of command output: each older read is expected to be read again at half
    odds, one round trip each, so on a cold cache the compaction waits for a larger context; a
    result since the latest prompt is the task at hand, certain to be needed (issue 25)."""
    def first_compacting(tool: str, gap: float) -> int:
        for n in range(4, 60):
            es = grown(n, tool=tool)
            if run(pipeline(tmp_path / f"{tool}{n}{gap}"), es, es[-1].timestamp + gap).reports:
                return n
        raise AssertionError(tool)
    assert first_compacting("read_file", 5) > first_compacting("bash", 5)     # 50 rounds against 23
    es = grown(6)
    lost = ce.reread_estimate(es[:-6], len(es) - 1, after_tokens=16_000, rates=RATES, ttl="5m")
    assert lost.tokens > 5 * 2_000 and lost.task_tokens == 0
    one_trip = 16_000 * R + ce.REREAD_CALL_TOKENS * RATES.output
    assert lost.usd == pytest.approx(ce.REUSE_READ * (lost.tokens * W + 5 * one_trip), rel=0.01)
    task = ce.reread_estimate(es[:-6], 0, after_tokens=16_000, rates=RATES, ttl="5m")
    assert task.task_tokens == task.tokens and task.usd == pytest.approx(lost.usd / ce.REUSE_READ, rel=0.01)
    bash = ce.reread_estimate(grown(6, tool="bash")[:-6], len(es) - 1, after_tokens=16_000, rates=RATES, ttl="5m")
    assert bash.usd == pytest.approx(lost.usd * ce.REUSE_OTHER / ce.REUSE_READ, rel=0.01)


def test_under_the_threshold_the_verbatim_tail_is_the_same_as_at_it(tmp_path):
    """Issue 49: early, the compaction happens because reading less pays, and it used to keep a
    shorter tail for that reason (2,000-10,000 tokens, issue 13). Measured in a closed loop against
    the real Claude Code, that tail lost the file reads the agent was asked about next, so it now
    keeps CC's 10,000-40,000 tokens as at the threshold (scaled alike for small windows). It still
    compacts under the threshold when that pays: here from 50 rounds of reads, where the short
    tail did from 41."""
    cfg = SummarizeConfig()
    for w in (8_000, 20_000, 200_000, 1_000_000):
        assert (cfg.limit("sm_early_min_tokens", w), cfg.limit("sm_early_max_tokens", w)) == \
            (cfg.limit("sm_min_tokens", w), cfg.limit("sm_max_tokens", w))
    es = grown(55)
    early = run(pipeline(tmp_path / "early"), es, es[-1].timestamp + 5)
    [rep] = [r for r in early.reports if r.layer == "session_memory"]
    assert rep.details["early"] and rep.details["cache"]["reason"] == "pays"
    assert 10_000 <= rep.details["kept_tokens"] <= 40_000
    p = pipeline(tmp_path / "at")
    at = asyncio.run(p.compact(es, trigger="auto", now=es[-1].timestamp + 5))
    [rep_at] = [r for r in at.reports if r.layer == "session_memory"]
    assert not rep_at.details["early"]
    assert [rep.details[k] for k in ("kept_tokens", "files")] == [rep_at.details[k] for k in ("kept_tokens", "files")]
    # the last five reads stay word for word in the tail; the five before them come back re-attached
    whole = {b["tool_use_id"] for e in early.entries if e.kind == "message" for b in e.content
             if b.get("type") == "tool_result" and b.get("content") == f"# m{b['tool_use_id'][1:]}\n" + "x" * 8_000}
    assert whole == {f"t{r}" for r in range(50, 55)}
    assert rep.details["files"] == [f"src/m{r}.py" for r in range(49, 44, -1)]


def test_early_compaction_can_be_turned_off_and_needs_the_cache_aware_engine(tmp_path):
    es = grown(60)
    assert run(pipeline(tmp_path / "on"), es, es[-1].timestamp + 5).reports       # compacts when it may
    for cfg in ({"early_compaction": False}, {"cache_aware": False}):
        res = run(pipeline(tmp_path / str(len(cfg)), **cfg), es, es[-1].timestamp + 5)
        assert not res.reports and res.entries is es


def test_the_llm_stage_never_runs_under_the_threshold(tmp_path):
    es = grown(40)
    summarizer = ScriptedSummarizer()
    config = PipelineConfig(budget=ContextBudget(context_window=WINDOW), overhead_tokens=12_000)
    p = Pipeline(config, tmp_path, default_stages(summarizer, SummarizeConfig(session_memory=False)), layers=([], []))
    res = run(p, es, es[-1].timestamp + 400)
    assert not res.reports and summarizer.calls == []


def test_files_are_read_from_disk_only_when_it_acts(tmp_path):
    """An early check that waits is judged on the files as last read: no disk read per turn; a
    compaction that acts attaches their current contents."""
    read: list[str] = []

    def read_file(path: str) -> str:
        read.append(path)
        return f"# {path} as it is now\n" + "y" * 2_000

    def with_reader(d):
        config = PipelineConfig(budget=ContextBudget(context_window=WINDOW), overhead_tokens=12_000)
        return Pipeline(config, d, [SessionMemoryStage(SummarizeConfig(), read_file=read_file)], layers=([], []))
    waits = grown(30)
    assert not run(with_reader(tmp_path / "w"), waits, waits[-1].timestamp + 5).reports and read == []
    acts = grown(60)                             # the default tail pays from 50 rounds (issue 49)
    res = run(with_reader(tmp_path / "a"), acts, acts[-1].timestamp + 5)
    [rep] = res.reports
    assert read == rep.details["files"] and len(read) == 5
    assert all("as it is now" in e.text() for e in res.entries if e.kind == "attachment")
