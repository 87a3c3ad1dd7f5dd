"""Hypothesis properties for layers 1–4 and `Pipeline.run_cheap` over generated histories and configs:
the projection stays valid, the count never rises, inputs are never mutated, state stays JSON."""
from __future__ import annotations

import pytest

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction import Entry, Pipeline, PipelineState, count_tokens, project, validate_history
from compaction.layers import collapse, microcompact, snip, tool_result_budget
from compaction.layerkit import Projector
from compaction.layer_context import LayerContext
from compaction.rounds import round_starts

from tests.strategies import configs, histories
from tests.hypothesis_budget import examples

LAYERS = {"tool_result_budget": tool_result_budget.apply, "snip": snip.apply,
          "microcompact": microcompact.apply, "collapse": collapse.apply}
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
gaps = st.sampled_from([0.0, 30.0, 3_000.0, 4_000.0, 10_000.0])


def snapshot(es: list[Entry]) -> list[str]:
    return [json.dumps(e.to_dict(), sort_keys=True) for e in es]


@settings(max_examples=examples(100), **SETTINGS)
@given(histories(), configs(), st.sampled_from(sorted(LAYERS)), gaps, st.booleans())
def test_every_layer_keeps_the_projection_valid_and_never_raises_the_count(es, cfg, name, gap, with_dir):
    with tempfile.TemporaryDirectory() as d:
        state = PipelineState()
        before = count_tokens(es, cfg.overhead_tokens)
        ctx = LayerContext(cfg, state, Path(d) if with_dir else None, es[-1].timestamp + gap, before)
        inp = list(es)
        frozen = snapshot(es)
        res = LAYERS[name](inp, ctx)
        assert inp == es and snapshot(inp) == frozen, "the layer mutated its input"
        assert validate_history(project(res.entries)) == []
        assert count_tokens(res.entries, cfg.overhead_tokens) <= before
        if res.report is None:
            assert res.entries == inp, "a layer that reports nothing must change nothing"
        else:
            assert res.report.layer == name and res.report.tokens_before == before
            assert res.report.tokens_after == count_tokens(res.entries, cfg.overhead_tokens)
        json.dumps(state.to_dict())


def _capture(layer, seen: list):
    def wrapped(entries, ctx):
        res = layer(entries, ctx)
        seen.append(res.entries)
        return res
    return wrapped


def _turns(es: list[Entry]) -> list[list[Entry]]:
    """The history cut into what the loop appends between model calls (one API round each)."""
    starts = round_starts(es)
    return [es[a:b] for a, b in zip(starts, starts[1:] + [len(es)])]


@pytest.mark.slow
@settings(max_examples=examples(60), **SETTINGS)
@given(histories(), configs(), gaps, st.booleans(), st.booleans())
def test_run_cheap_turn_by_turn_sends_valid_requests_and_never_raises_the_count(es, cfg, gap, with_dir, in_place):
    """Like the loop: adopt `res.entries`, then append the next round — to that same list
    (`in_place`, exercising the append-only fast paths) or to a new one."""
    with tempfile.TemporaryDirectory() as d:
        p = Pipeline(cfg, session_dir=Path(d) if with_dir else None)
        views: list = []
        rewriting, projecting = p.rewriting, p.projecting
        p.projecting = [(n, _capture(f, views)) for n, f in projecting]
        history: list[Entry] = []
        for chunk in _turns(es):
            if in_place:
                history.extend(chunk)
            else:
                history = history + chunk
            inp = list(history)
            before = p.count(history)
            res = p.run_cheap(history, now=chunk[-1].timestamp + gap)
            assert history == inp
            assert validate_history(res.request) == []
            assert validate_history(project(res.entries)) == []
            assert res.request == project(views[-1]), "incremental projection differs from project()"
            assert res.tokens <= before and p.count(res.entries) <= before
            assert res.tokens == p.count(views[-1])
            history = res.entries
        json.dumps(p.state.to_dict())
        assert len(rewriting) == 3


@settings(max_examples=examples(100), **SETTINGS)
@given(histories(max_rounds=12), st.lists(st.tuples(st.sampled_from(["append", "replace", "drop", "insert"]),
                                                    st.integers(0, 10_000)), max_size=12))
def test_projector_matches_project_under_any_edit(es, edits):
    proj = Projector()
    view = list(es[:2])
    assert proj.project(view) == project(view)
    pool = list(es)
    for op, k in edits:
        if op == "append":
            view = view + [pool[k % len(pool)]]
        elif op == "replace" and view:
            i = k % len(view)
            view = view[:i] + [Entry(dict(view[i].message), kind=view[i].kind)] + view[i + 1:]
        elif op == "drop" and view:
            i = k % len(view)
            view = view[:i] + view[i + 1 + k % 3:]
        elif op == "insert":
            i = k % (len(view) + 1)
            view = view[:i] + [pool[k % len(pool)]] + view[i:]
        assert proj.project(view) == project(view)
