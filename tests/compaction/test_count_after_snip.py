"""Issue 24: snip after collapse. Rounds that collapse had replaced by digests were held in the
last request as their digests; snipping them frees a digest's worth from the count, not the rounds'
whole size (it used to: 7,956 counted where the server had 22,875)."""
from __future__ import annotations

from compaction import Pipeline, PipelineConfig, project, validate_history
from tests.compaction.collapse_helpers import BUDGET, session
from tests.compaction.count_helpers import answered


def test_snipping_collapsed_rounds_frees_their_digests(tmp_path):
    cfg = PipelineConfig(budget=BUDGET, snip_enabled=False, microcompact_enabled=False, time_based_enabled=False,
                         cache_aware=False)
    p = Pipeline(cfg, session_dir=tmp_path)
    es = session(26, usage=60_000)
    res = p.run_cheap(es)
    assert [r.layer for r in res.reports] == ["collapse"]
    spans = len(p.state.layers["collapse"]["spans"])
    # the server answers the collapsed request; then snip acts (set to act early) on the working history
    work = res.entries + answered(res.view, 0)
    cfg.snip_enabled, cfg.snip_trigger_ratio, cfg.snip_target_ratio, cfg.snip_keep_recent_ratio = True, 0.1, 0.05, 0.02
    after = p.run_cheap(work)
    assert "snip" in [r.layer for r in after.reports]
    assert len(p.state.layers["collapse"]["spans"]) < spans          # snipped rounds took spans with them
    truth = sum(e.tokens for e in after.view)                         # what the next request holds
    assert abs(after.tokens - truth) <= 0.01 * truth, (after.tokens, truth)
    assert validate_history(project(after.view)) == []
