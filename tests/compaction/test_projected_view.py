"""Issue 12, problems 1 and 3: one projected view is the input to the count and the categories;
edits to what the view hides do not move the count."""
from __future__ import annotations

from compaction import Entry, Pipeline, PipelineConfig, breakdown, project, validate_history
from compaction.accounting.tokens import count_tokens

from tests.compaction.collapse_helpers import BUDGET, T0, round_, session

USED = ("system", "tools", "user_text", "assistant_text", "tool_calls", "tool_results", "summaries")


def _collapsed_then_answered() -> tuple[Pipeline, list[Entry], int]:
    """A session collapsed by a commit, then answered: the new response's usage reflects the view."""
    # the accounting of a commit, not when it pays (test_cache_economics.py): the cache rule is off
    pipe = Pipeline(PipelineConfig(budget=BUDGET, microcompact_enabled=False, cache_aware=False))
    es = session(40)
    first = pipe.run_cheap(es, now=T0 + 500)
    assert any(r.layer == "collapse" for r in first.reports)
    sent = first.tokens
    more = es + round_(40, size=200, usage=sent + 50)
    return pipe, more, sent


def test_clearing_results_collapse_already_hides_does_not_move_the_count():
    pipe, more, _ = _collapsed_then_answered()
    view1, count1 = pipe.view(more)
    assert count1 == count_tokens(view1)
    # an hour later microcompact clears every old result, hidden or not
    pipe.config.microcompact_enabled = True
    res = pipe.run_cheap(more, now=T0 + 10 * 40 + 2 * 3600)
    assert any(r.layer == "microcompact" for r in res.reports)
    visible_freed = sum(e.tokens for e in view1) - sum(e.tokens for e in res.view)
    assert visible_freed > 0
    # only what the view showed is freed from the count
    assert res.tokens == count1 - visible_freed, (res.tokens, count1, visible_freed)
    assert validate_history(project(res.view)) == []


def test_the_categories_come_from_the_view_and_sum_to_its_count():
    pipe, more, _ = _collapsed_then_answered()
    view, count = pipe.view(more)
    b = BUDGET
    cats = breakdown(view, system_tokens=300, tools_tokens=700, window=b.context_window,
                     threshold=b.autocompact_threshold, total=count)
    assert sum(cats[c] for c in USED) == count
    assert sum(cats.values()) == b.context_window
    assert cats["summaries"] > 0   # the digests


def test_a_collapse_commit_reanchors_in_the_anchors_real_tokens():
    """The server counts 70% more than the estimates: right after a commit the count is what the
    collapsed request really holds, not the old usage minus what the estimates say was hidden."""
    es = session(40)
    a = max(i for i, e in enumerate(es) if e.usage)
    rate = 1.7
    real = round(rate * sum(e.tokens for e in es[:a + 1]))
    es[a] = Entry(es[a].message, response_id=es[a].response_id, timestamp=es[a].timestamp, uuid=es[a].uuid,
                  usage={"input_tokens": real - 5, "output_tokens": 5})
    pipe = Pipeline(PipelineConfig(budget=BUDGET, microcompact_enabled=False, snip_enabled=False, cache_aware=False))
    res = pipe.run_cheap(es, now=T0 + 500)
    assert [r.layer for r in res.reports] == ["collapse"]
    av = max(i for i, e in enumerate(res.view) if e.usage)
    truth = rate * sum(e.tokens for e in res.view[:av + 1]) + sum(e.tokens for e in res.view[av + 1:])
    assert abs(res.tokens - truth) <= 0.01 * truth, (res.tokens, truth)
