"""Properties over generated histories: every summarizing compaction leaves a valid history, and
whatever it replaced is in its transcript first."""
from __future__ import annotations

import pytest

import asyncio
import json
import tempfile
from pathlib import Path

from hypothesis import event, given, settings
from hypothesis import strategies as st

from compaction import (SummarizeConfig, SummarizeError, project, read_transcript, round_starts, user,
                        validate_history)
from compaction.reinject import reinject
from compaction.layers.session_memory import SessionNotes, keep_start, safe_cuts

from tests.strategies import histories
from tests.compaction.autocompact_helpers import SUMMARY, ScriptedSummarizer, make_pipeline
from tests.hypothesis_budget import examples

windows = st.sampled_from([2_000, 8_000, 20_000, 200_000])
scripts = st.sampled_from([
    (SUMMARY,),
    (SummarizeError("prompt is too long: 250000 tokens > 200000 maximum", prompt_too_long=True), SUMMARY),
    (SummarizeError("prompt is too long", prompt_too_long=True),) * 2 + (SUMMARY,),
    (SummarizeError("boom", transport=True),),
    ("",),
])


def as_reads(entries):
    """Every tool call becomes a read_file of a path (a few distinct ones), so there is something to re-attach."""
    out = []
    for e in entries:
        if e.role == "assistant" and e.tool_use_ids():
            e = e.with_content([{**b, "name": "read_file", "input": {"path": f"f{len(b['input']['arg']) % 7}.py"}}
                                if b.get("type") == "tool_use" else b for b in e.content])
        out.append(e)
    return out


def check(entries, res, folder: Path) -> None:
    assert validate_history(project(res.entries)) == []
    boundaries = [e for e in res.entries if e.kind == "compact_boundary"]
    if not boundaries:
        assert [e.uuid for e in res.entries] == [e.uuid for e in entries]
        return
    path = boundaries[-1].meta["transcript_path"]
    assert Path(path).parent == folder / "transcripts"
    assert [e.to_dict() for e in read_transcript(Path(path))] == [json.loads(json.dumps(e.to_dict())) for e in entries]
    assert res.tokens < sum(e.tokens for e in entries) or any(e.usage for e in entries)


@settings(max_examples=examples(100), deadline=None)
@given(histories(min_rounds=1, max_rounds=25), windows, scripts, st.sampled_from(["manual", "reactive"]),
       st.sampled_from([None, "the tests"]))
def test_every_compaction_result_is_valid(entries, window, script, trigger, focus):
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        p = make_pipeline(folder, ScriptedSummarizer(*script), window=window)
        res = asyncio.run(p.compact(entries, trigger=trigger, instructions=focus))
        check(entries, res, folder)
        event(next((e.meta["layer"] for e in res.entries if e.kind == "compact_boundary"), None)
              or ("failed" if res.reports else "declined"))
        json.dumps(p.state.to_dict())


@pytest.mark.slow
@settings(max_examples=examples(60), deadline=None)
@given(histories(min_rounds=3, max_rounds=25), windows, scripts)
def test_auto_runs_stay_valid_turn_after_turn(entries, window, script):
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        p = make_pipeline(folder, ScriptedSummarizer(*script), window=window)
        starts = round_starts(entries)
        k = starts[len(starts) // 2] or len(entries)      # the session so far ends where a round starts
        res = asyncio.run(p.run(entries[:k]))
        assert validate_history(project(res.entries)) == []
        res = asyncio.run(p.run(res.entries + entries[k:]))    # the next rounds arrive after any compaction
        assert validate_history(project(res.entries)) == []


@pytest.mark.slow
@settings(max_examples=examples(100), deadline=None)
@given(histories(min_rounds=1, max_rounds=30), st.integers(0, 5_000), st.integers(0, 8), st.integers(0, 20_000))
def test_keep_start_is_always_a_safe_cut(entries, min_tokens, min_text, span):
    max_tokens = min_tokens + span
    start = keep_start(entries, min_tokens, min_text, max_tokens)
    assert safe_cuts(entries)[start]
    tail = entries[start:]
    assert sum(e.tokens for e in tail) <= max_tokens
    assert validate_history(project([user("notes")] + tail)) == []


@pytest.mark.slow
@settings(max_examples=examples(100), deadline=None)
@given(histories(min_rounds=1, max_rounds=30), st.integers(1, 6), st.integers(1, 6_000), st.integers(1, 20_000))
def test_reinjected_files_always_within_budget(entries, files, per, total):
    entries = as_reads(entries)
    out = asyncio.run(reinject(entries, [], max_files=files, file_tokens=per, total_tokens=total))
    assert len(out) <= files
    assert all(e.tokens <= per for e in out)
    assert sum(e.tokens for e in out) <= total
    assert len({e.meta["path"] for e in out}) == len(out)


@settings(max_examples=examples(60), deadline=None)
@given(histories(min_rounds=1, max_rounds=30), st.integers(0, 60))
def test_incremental_notes_equal_notes_built_at_once(entries, cut):
    cut = min(cut, len(entries))
    step = SessionNotes({})
    step.update(entries[:cut])
    step = SessionNotes(json.loads(json.dumps(step.s)))     # a resume in between
    step.update(entries)
    once = SessionNotes({})
    once.update(entries)
    assert step.s == once.s
    assert once.render(500)


def test_config_scaling_matches_budget_rules():
    c = SummarizeConfig()
    assert c.limit("sm_min_tokens", 200_000) == 10_000 and c.limit("sm_max_tokens", 1_000_000) == 40_000
    assert c.limit("sm_min_tokens", 20_000) == 1_000 and c.limit("reinject_total_tokens", 20_000) == 5_000
    assert SummarizeConfig(sm_min_tokens=123).limit("sm_min_tokens", 2_000) == 123
