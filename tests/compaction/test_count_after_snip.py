"""Issue 24: snip after collapse. Rounds that collapse had replaced by digests were held in the
last request as their digests; snipping them frees a digest's worth from the count, not the rounds'
whole size (it used to: 7,956 counted where the server had 22,875). And the calibration scales
what layers add and remove, never the server's own usage."""
from __future__ import annotations

from compaction import Entry, Pipeline, PipelineConfig, count_tokens, project, tool_result_block, validate_history
from tests.compaction.collapse_helpers import BUDGET, T0, session


def _answered(view: list[Entry], n: int) -> list[Entry]:
    """A response to the request `view` whose usage is exactly the estimate of it (a server that
    counts like the estimator), then its tool result."""
    answer = Entry({"role": "assistant", "content": [{"type": "text", "text": "next"},
                                                     {"type": "tool_use", "id": f"new{n}", "name": "bash",
                                                      "input": {"command": "ls"}}]},
                   response_id=f"new{n}", timestamp=T0 + 5_000 + n)
    answer = Entry(answer.message, response_id=answer.response_id, timestamp=answer.timestamp,
                   usage={"input_tokens": sum(e.tokens for e in view), "output_tokens": answer.tokens})
    return [answer, Entry({"role": "user", "content": [tool_result_block(f"new{n}", "y" * 800)]},
                          timestamp=T0 + 5_001 + n)]


def test_snipping_collapsed_rounds_frees_their_digests(tmp_path):
    cfg = PipelineConfig(budget=BUDGET, snip_enabled=False, microcompact_enabled=False, time_based_enabled=False,
                         cache_aware=False)
    p = Pipeline(cfg, session_dir=tmp_path)
    es = session(26, usage=60_000)
    res = p.run_cheap(es)
    assert [r.layer for r in res.reports] == ["collapse"]
    spans = len(p.state.layers["collapse"]["spans"])
    # the server answers the collapsed request; then snip acts (set to act early) on the working history
    work = res.entries + _answered(res.view, 0)
    cfg.snip_enabled, cfg.snip_trigger_ratio, cfg.snip_target_ratio, cfg.snip_keep_recent_ratio = True, 0.1, 0.05, 0.02
    after = p.run_cheap(work)
    assert "snip" in [r.layer for r in after.reports]
    assert len(p.state.layers["collapse"]["spans"]) < spans          # snipped rounds took spans with them
    truth = sum(e.tokens for e in after.view)                         # what the next request holds
    assert abs(after.tokens - truth) <= 0.01 * truth, (after.tokens, truth)
    assert validate_history(project(after.view)) == []


def test_the_calibration_scales_estimates_never_the_usage():
    es = session(3, usage=None)
    plain = count_tokens(es, 1_000)
    assert count_tokens(es, 1_000, 1.5) == 1_000 + round(1.5 * (plain - 1_000))
    answered = es + _answered(es, 0)
    anchor = answered[-2]
    real = anchor.usage["input_tokens"] + anchor.usage["output_tokens"]
    shifted = answered[:-2] + [anchor.with_meta(usage_adjust=-200, real_adjust=30), answered[-1]]
    assert count_tokens(shifted, 1_000, 1.5) == real + 30 + round(1.5 * (answered[-1].tokens - 200))
