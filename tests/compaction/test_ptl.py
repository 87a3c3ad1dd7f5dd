"""Prompt-too-long on the summary call: parse the gap, drop the oldest rounds, retry at most 3 times."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import SummarizeError, assistant, group_by_api_round, project, tool_result_block, user, validate_history
from compaction.layers.ptl import (RETRY_MARKER, is_retry_marker, parse_prompt_too_long, strip_orphans, token_gap,
                            truncate_for_retry)

from tests.strategies import histories
from tests.compaction.autocompact_helpers import SUMMARY, ScriptedSummarizer, make_pipeline, session
from tests.hypothesis_budget import examples


def ptl(actual: int, limit: int = 200_000) -> SummarizeError:
    return SummarizeError(f"prompt is too long: {actual} tokens > {limit} maximum", prompt_too_long=True)


@pytest.mark.parametrize("msg,expected", [
    ("prompt is too long: 210000 tokens > 200000 maximum", (210_000, 200_000)),
    ("Error 400: Prompt is too long: 201,337 tokens > 200,000 maximum", (201_337, 200_000)),
    ("prompt is too long", None),
    ("rate limited", None),
])
def test_parse(msg, expected):
    assert parse_prompt_too_long(msg) == expected


def test_gap():
    assert token_gap("prompt is too long: 210000 tokens > 200000 maximum") == 10_000
    assert token_gap("prompt is too long: 100 tokens > 200 maximum") is None
    assert token_gap("prompt is too long") is None


def rounds_of(sizes: list[int]):
    """Group 0 is a user request; then one tool round per size (tokens of its result ~ size)."""
    es = [user("start")]
    for i, size in enumerate(sizes):
        es.append(assistant([{"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"command": "ls"}}],
                            response_id=f"m{i}"))
        es.append(user([tool_result_block(f"t{i}", "a" * (size * 4))]))
    return es


def test_drops_the_oldest_rounds_that_cover_the_gap():
    es = rounds_of([1_000, 1_000, 1_000, 1_000, 1_000])
    groups = group_by_api_round(es)
    g0, g1 = (sum(e.tokens for e in g) for g in groups[:2])
    out = truncate_for_retry(es, g0 + g1)            # exactly two groups' worth
    assert out.dropped_rounds == 2 and out.dropped_tokens == g0 + g1
    assert out.entries[0].content[0]["text"] == RETRY_MARKER      # starts with an assistant → marker
    assert [e.uuid for e in out.entries[1:]] == [e.uuid for g in groups[2:] for e in g]
    assert truncate_for_retry(es, g0 + g1 + 1).dropped_rounds == 3
    assert validate_history(project(out.entries)) == []


def test_without_a_gap_drops_20_percent():
    es = rounds_of([10] * 9)                          # 10 groups
    assert truncate_for_retry(es, None).dropped_rounds == 2
    assert truncate_for_retry(rounds_of([10] * 3), None).dropped_rounds == 1   # at least one


def test_keeps_at_least_one_round_and_gives_up_with_one():
    es = rounds_of([10, 10, 10])
    out = truncate_for_retry(es, 10**9)
    assert out.dropped_rounds == 3 and len(group_by_api_round([e for e in out.entries if not is_retry_marker(e)])) == 1
    assert truncate_for_retry(out.entries, 10**9) is None
    assert truncate_for_retry([user("only")], 5) is None


def test_the_previous_marker_is_stripped_not_stacked():
    es = rounds_of([10] * 6)
    once = truncate_for_retry(es, None)
    twice = truncate_for_retry(once.entries, None)
    assert sum(1 for e in twice.entries if is_retry_marker(e)) == 1
    assert twice.dropped_rounds == 1 and is_retry_marker(twice.entries[0])
    assert validate_history(project(twice.entries)) == []


def test_strip_orphans_removes_unanswerable_results():
    es = [user([tool_result_block("gone", "x"), {"type": "text", "text": "hi"}]),
          assistant([{"type": "tool_use", "id": "a", "name": "bash", "input": {}}], response_id="r"),
          user([tool_result_block("a", "ok")]), user([tool_result_block("zz", "orphan")])]
    out = strip_orphans(es)
    assert [b["type"] for b in out[0].content] == ["text"]
    assert len(out) == 3 and validate_history(project(out)) == []


@settings(max_examples=examples(100), deadline=None)
@given(histories(min_rounds=1, max_rounds=20), st.one_of(st.none(), st.integers(1, 50_000)))
def test_truncation_never_leaves_an_orphan(entries, gap):
    out = truncate_for_retry(entries, gap)
    if out is None:
        assert len(group_by_api_round(entries)) < 2
        return
    assert out.dropped_rounds >= 1
    msgs = project(out.entries)
    assert validate_history(msgs) == []
    kept = {e.uuid for e in out.entries}
    assert any(e.uuid in kept for e in entries)                   # at least one round kept
    assert entries[0].uuid not in kept                            # the oldest went first


# --- in the stage -------------------------------------------------------------------------------

async def test_retry_drops_rounds_and_succeeds(tmp_path):
    s = ScriptedSummarizer(ptl(205_000), ptl(201_000), SUMMARY)   # gaps of 5,000 and 1,000 tokens
    p = make_pipeline(tmp_path, s, llm_only=True)
    es = session(32)
    res = await p.run(es)
    assert len(s.calls) == 3
    sizes = [len(c["messages"]) for c in s.calls]
    assert sizes[0] > sizes[1] > sizes[2]
    for c in s.calls:
        assert validate_history(c["messages"]) == []
    assert RETRY_MARKER in str(s.calls[1]["messages"][0]) and str(s.calls[2]["messages"]).count(RETRY_MARKER) == 1
    [report] = res.reports
    assert report.details["ptl_retries"] == 2 and report.details["dropped_rounds"] >= 2
    assert res.entries[0].kind == "compact_boundary"


async def test_at_most_three_retries_then_the_history_is_kept(tmp_path):
    s = ScriptedSummarizer(SummarizeError("prompt is too long", prompt_too_long=True))   # no gap: 20% each time
    p = make_pipeline(tmp_path, s, llm_only=True)
    es = session(32)
    res = await p.run(es)
    assert len(s.calls) == 4                          # the first try and 3 retries
    assert res.entries == es
    assert res.reports[0].details["failed"] and "3 retries" in res.reports[0].action


async def test_a_gap_larger_than_the_history_leaves_one_round_then_gives_up(tmp_path):
    s = ScriptedSummarizer(ptl(900_000))
    p = make_pipeline(tmp_path, s, llm_only=True)
    es = session(32)
    res = await p.run(es)
    assert len(s.calls) == 2
    last = s.calls[1]["messages"]
    assert validate_history(last) == [] and len(last) <= 4      # marker + one round + the prompt
    assert res.entries == es and "no older rounds" in res.reports[0].action


async def test_a_ptl_answer_given_as_text_is_retried_too(tmp_path):
    s = ScriptedSummarizer("Prompt is too long: 210000 tokens > 200000 maximum", SUMMARY)
    p = make_pipeline(tmp_path, s, llm_only=True)
    res = await p.run(session(32))
    assert len(s.calls) == 2 and res.entries[0].kind == "compact_boundary"
