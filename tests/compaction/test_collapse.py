"""Layer 4: context collapse — a read-time view with deterministic digests and a collapse store."""
from __future__ import annotations

import json

from compaction import Entry, PipelineConfig, PipelineState, count_tokens, project, validate_history
from compaction.layers import collapse
from compaction.layer_context import LayerContext
from compaction.accounting.tokens import usage_total
from tests.compaction.collapse_helpers import BUDGET, T0, round_, session


def ctx(es, state=None, **cfg) -> LayerContext:
    return LayerContext(PipelineConfig(budget=BUDGET, **cfg), state or PipelineState(), None, T0 + 9_999,
                        count_tokens(es))


def digests(view) -> list[Entry]:
    return [e for e in view if e.meta.get("collapse")]


def test_commit_collapses_old_spans_in_the_view_only():
    es = session(40)
    inp = list(es)
    state = PipelineState()
    before = count_tokens(es)
    assert before >= 0.9 * BUDGET.effective_window
    res = collapse.apply(es, ctx(es, state))
    view = res.entries
    assert es == inp and all(e.meta == {} or e.usage for e in es)  # the stored history is untouched
    ds = digests(view)
    assert ds and res.report is not None and res.report.layer == "collapse"
    assert ds[0].text() == ("[collapsed rounds 1–6 (12 messages): read src/m0.py, src/m4.py; edited src/m2.py; "
                            "ran `pytest tests/t1.py -q` (exit 1), `pytest tests/t5.py -q` (exit 2); "
                            "searched grep def f3; assistant said “Looking at part 0.”]")
    assert view[0] is es[0]  # the head
    assert view[-4:-2] == es[-4:-2] and view[-1] is es[-1]  # the recent tail
    assert validate_history(project(view)) == []
    hidden = sum(e.tokens for e in es) - sum(e.tokens for e in view)
    # the anchor holds real tokens: what the digests hid is shifted at the anchor's real-per-estimate
    # rate (issue 12, problem 3: a commit re-anchors in the anchor's units, not the estimate's)
    rate = usage_total(es[-2].usage) / sum(e.tokens for e in es[:-1])
    assert count_tokens(view) == before - round(hidden * rate) <= 0.75 * BUDGET.effective_window
    spans = state.of("collapse")["spans"]
    assert [s["first"] for s in spans] == [view[1].meta["first"]] + [d.meta["first"] for d in ds[1:]]
    json.dumps(state.to_dict())


def test_a_committed_span_stays_collapsed_and_byte_identical():
    es = session(40)
    state = PipelineState()
    v1 = collapse.apply(es, ctx(es, state)).entries
    n = len(digests(v1))
    # next turn: the response's usage already reflects the smaller view, and it is below the ratio
    more = es + round_(40, usage=30_000)
    v2 = collapse.apply(more, ctx(more, state))
    assert v2.report is None
    assert len(digests(v2.entries)) == n
    k = v1.index(digests(v1)[-1]) + 1
    assert project(v2.entries)[:k] == project(v1)[:k]
    assert count_tokens(v2.entries) == count_tokens(more)  # no shift: the new usage saw the view
    # a resumed process replays the same store
    resumed = PipelineState.from_dict(json.loads(json.dumps(state.to_dict())))
    rebuilt = [Entry.from_dict(e.to_dict()) for e in more]
    v3 = collapse.apply(rebuilt, ctx(rebuilt, resumed)).entries
    assert project(v3)[:k] == project(v1)[:k]


def test_below_the_commit_ratio_nothing_is_collapsed():
    es = session(40, usage=30_000)
    res = collapse.apply(es, ctx(es))
    assert res.report is None and res.entries is es


def test_spans_whose_entries_are_gone_leave_the_store():
    es = session(40)
    state = PipelineState()
    collapse.apply(es, ctx(es, state))
    assert state.of("collapse")["spans"]
    summarised = [Entry({"role": "user", "content": [{"type": "text", "text": "summary"}]})] + es[-6:]
    res = collapse.apply(summarised, ctx(summarised, state, collapse_commit_ratio=2.0))
    assert res.entries is summarised and state.of("collapse")["spans"] == []


def test_disabled_collapse_leaves_the_view_alone():
    es = session(40)
    res = collapse.apply(es, ctx(es, collapse_enabled=False))
    assert res.report is None and res.entries is es


def test_digest_is_deterministic_and_bounded():
    span = round_(1) + round_(2)
    a = collapse.digest(span, 3, 4)
    assert a == collapse.digest([Entry.from_dict(e.to_dict()) for e in span], 3, 4)
    assert a == ("[collapsed rounds 3–4 (4 messages): edited src/m2.py; ran `pytest tests/t1.py -q` (exit 1); "
                 "assistant said “Looking at part 1.”]")
    assert len(collapse.digest(session(30)[1:], 1, 30, max_chars=120)) <= 120


def test_a_span_that_no_longer_shrinks_the_view_is_shown_in_full_rather_than_raise_the_count():
    es = session(40)
    state = PipelineState()
    collapse.apply(es, ctx(es, state))
    first = state.of("collapse")["spans"][0]
    # before the next response, what the span hides became smaller than its digest (here: a
    # long digest; in a session: a later layer clearing results inside the span)
    first["digest"] = "[collapsed: " + "much detail " * 1_000 + "]"
    view = collapse.apply(es, ctx(es, state, collapse_commit_ratio=2.0)).entries
    assert count_tokens(view) <= count_tokens(es)
    assert not any(d.meta.get("first") == first["first"] for d in digests(view))
    assert len(digests(view)) == len(state.of("collapse")["spans"]) - 1
    assert validate_history(project(view)) == []


def test_a_later_commit_collapses_the_next_old_rounds_without_overlap():
    es = session(40)
    state = PipelineState()
    v1 = collapse.apply(es, ctx(es, state)).entries
    n1 = len(state.of("collapse")["spans"])
    more = list(es)
    for r in range(40, 60):
        more += round_(r, usage=52_000 if r == 59 else None)
    res = collapse.apply(more, ctx(more, state))
    spans = state.of("collapse")["spans"]
    assert res.report is not None and len(spans) > n1
    where = {e.uuid: i for i, e in enumerate(more)}
    ranges = [(where[s["first"]], where[s["last"]]) for s in spans]
    assert all(b1 < a2 for (_, b1), (a2, _) in zip(ranges, ranges[1:]))  # ordered, disjoint
    assert ranges[n1][0] == ranges[n1 - 1][1] + 1  # picks up right after the last span
    # the cached prefix is intact: the old view's blocks up to its last digest come first
    # (adjacent digests merge into one message, so compare the flattened block sequence)
    k = v1.index(digests(v1)[-1]) + 1
    old_blocks = [b for m in project(v1[:k]) for b in m["content"]]
    new_blocks = [b for m in project(res.entries) for b in m["content"]]
    assert new_blocks[:len(old_blocks)] == old_blocks
    assert validate_history(project(res.entries)) == []
