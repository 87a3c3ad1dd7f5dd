"""Issue 12: one projected view per turn is the input to the count, the category breakdown and the
summarizing stages — properties over generated histories and every configuration."""
from __future__ import annotations

import pytest

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction import Entry, Pipeline, breakdown, project, validate_history
from compaction.accounting.tokens import anchor_index, count_tokens, usage_total
from compaction.rounds import round_starts

from tests.strategies import configs, histories
from tests.hypothesis_budget import examples

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
USED = ("system", "tools", "user_text", "assistant_text", "tool_calls", "tool_results", "summaries")


class Recorder:
    """A summarizing stage that only records what it was handed."""
    name = "recorder"

    def __init__(self) -> None:
        self.seen: list[tuple[list[Entry], int, list[Entry] | None]] = []

    async def __call__(self, entries, ctx):
        self.seen.append((entries, ctx.tokens, ctx.history))
        return None


def _turns(es: list[Entry]) -> list[list[Entry]]:
    starts = round_starts(es)
    return [es[a:b] for a, b in zip(starts, starts[1:] + [len(es)])]


def _check_view(p: Pipeline, view: list[Entry], tokens: int, system: int, tools: int) -> None:
    cfg = p.config
    assert validate_history(project(view)) == []
    assert tokens == count_tokens(view, cfg.overhead_tokens)
    if anchor_index(view) is None:   # no usage applies: the count is the projection's estimate
        assert tokens == cfg.overhead_tokens + sum(e.tokens for e in view)
    else:
        # The clamp is of the whole figure (count_tokens' docstring): what layers freed before the
        # anchor (usage_adjust, estimated) can exceed its usage, and the entries after it then
        # make up for it rather than add to a floor of 0.
        i = anchor_index(view)
        a = view[i]
        assert tokens == max(0, usage_total(a.usage) + int(a.meta.get("real_adjust", 0))
                             + int(a.meta.get("usage_adjust", 0)) + sum(e.tokens for e in view[i + 1:]))
    b = cfg.budget
    cats = breakdown(view, system_tokens=system, tools_tokens=tools, window=b.context_window,
                     threshold=b.autocompact_threshold, autocompact_enabled=b.autocompact_enabled, total=tokens)
    assert sum(cats[c] for c in USED) == tokens
    assert all(v >= 0 for v in cats.values())
    if tokens <= b.context_window:
        assert sum(cats.values()) == b.context_window


@pytest.mark.slow
@settings(max_examples=examples(60), **SETTINGS)
@given(histories(), configs(), st.sampled_from([0.0, 30.0, 4_000.0]), st.booleans(), st.integers(0, 2_000))
def test_count_categories_and_summarizer_input_are_the_projection(es, cfg, gap, with_dir, system):
    system = min(system, cfg.overhead_tokens)
    tools = cfg.overhead_tokens - system
    with tempfile.TemporaryDirectory() as d:
        rec = Recorder()
        p = Pipeline(cfg, session_dir=Path(d) if with_dir else None, stages=[rec])
        cheap = p.run_cheap
        results = []

        def spy(entries, now=None):
            res = cheap(entries, now)
            results.append(res)
            return res
        p.run_cheap = spy
        history: list[Entry] = []
        for chunk in _turns(es):
            history = history + chunk
            now = history[-1].timestamp + gap
            res = asyncio.run(p.run(history, now))
            history = res.entries
            _check_view(p, res.view, res.tokens, system, tools)
            # between runs the figure is replayed from the same view
            view, tokens = p.view(history, now)
            assert tokens == res.tokens and project(view) == res.request
        n = len(rec.seen)
        out = asyncio.run(p.compact(history, trigger="manual", now=history[-1].timestamp + gap))
        if not p.breakers().allows("manual"):
            return
        assert len(rec.seen) == n + 1
        given_entries, given_tokens, given_history = rec.seen[-1]
        sent = results[-1]
        # the summarizer reads exactly what the request holds, counted as the figure counts it
        assert given_entries is sent.view and given_tokens == sent.tokens
        assert project(given_entries) == sent.request
        assert given_history is sent.entries
        _check_view(p, out.view, out.tokens, system, tools)
