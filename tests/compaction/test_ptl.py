"""Prompt-too-long on the summary call: parse the gap, shed the oldest tool output (then older rounds, never a
summary or a user's words), retry at most 3 times."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction import SummarizeError, assistant, group_by_api_round, project, tool_result_block, user, validate_history
from compaction.layers.collapse import USER_HEAD_CHARS, USER_TAIL_CHARS
from compaction.layers.ptl import (FILE_LEFT_OUT, RETRY_MARKER, TOOL_OUTPUT_LEFT_OUT, is_retry_marker,
                                   parse_prompt_too_long, shed_for_retry, strip_orphans, token_gap)

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


def rounds_of(sizes: list[int], note: str | None = None) -> list:
    """Group 0 is a user request (after an earlier summary when `note` is given); then one tool
    round per size (tokens of its result ~ size), each answered and followed by a user prompt."""
    es = [user(note, kind="summary", layer="autocompact")] if note else []
    es.append(user("start"))
    for i, size in enumerate(sizes):
        es.append(assistant([{"type": "text", "text": f"thinking aloud {i} " + "t" * 400},
                             {"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"command": "ls"}}],
                            response_id=f"m{i}"))
        es.append(user([tool_result_block(f"t{i}", "a" * (size * 4)), {"type": "text", "text": f"prompt {i}"}]))
    return es


def texts_of(entries) -> str:
    return "\n".join(b["text"] for m in project(entries) for b in m["content"] if b.get("type") == "text")


def results_of(entries) -> list:
    return [b for e in entries for b in e.content if b.get("type") == "tool_result"]


def test_sheds_the_oldest_tool_output_first_and_keeps_every_round():
    es = rounds_of([1_000] * 5)
    out = shed_for_retry(es, 1_500)                   # 1,650 with the margin: two results' worth
    assert (out.cleared_results, out.dropped_rounds, out.dropped_tokens) == (2, 0, 0)
    assert out.cleared_tokens >= 1_650 and out.shed_tokens == out.cleared_tokens
    assert [e.uuid for e in out.entries] == [e.uuid for e in es]          # no round dropped, no marker
    assert [r["content"] for r in results_of(out.entries)][:3] == [TOOL_OUTPUT_LEFT_OUT] * 2 + ["a" * 4_000]
    assert [r["tool_use_id"] for r in results_of(out.entries)] == [f"t{i}" for i in range(5)]   # pairs whole
    assert validate_history(project(out.entries)) == []
    assert results_of(es)[0]["content"] == "a" * 4_000                     # the history is not mutated


def test_rounds_go_only_once_tool_output_is_all_shed_and_never_the_summary_or_a_prompt():
    es = rounds_of([1_000] * 5, note="EARLIER SUMMARY: the API key lives in conf/keys.toml")
    out = shed_for_retry(es, 6_000)                    # more than the five results hold
    assert out.cleared_results == 5 and out.dropped_rounds >= 1
    assert is_retry_marker(out.entries[0]) and sum(map(is_retry_marker, out.entries)) == 1
    text = texts_of(out.entries)
    assert "EARLIER SUMMARY: the API key lives in conf/keys.toml" in text
    assert all(f"prompt {i}" in text for i in range(5)) and "start" in text
    assert "thinking aloud 0" not in text and "thinking aloud 4" in text   # the newest round stays whole
    assert validate_history(project(out.entries)) == []


def test_without_a_gap_a_fifth_of_the_request_is_shed():
    es = rounds_of([1_000] * 10)
    out = shed_for_retry(es, None)
    total = sum(e.tokens for e in es)
    assert out.cleared_tokens >= total * 0.2 and out.dropped_rounds == 0
    assert out.cleared_results == math.ceil(total * 0.2 / 1_000)


def test_when_nothing_is_left_to_shed_it_says_so():
    es = rounds_of([1_000] * 3, note="SUMMARY")
    out = shed_for_retry(es, 10**9)
    assert out.cleared_results == 3 and out.dropped_rounds == 2      # all but the newest round
    assert shed_for_retry(out.entries, 10**9) is None
    assert shed_for_retry([user("only")], 5) is None
    assert shed_for_retry([user("SUMMARY", kind="summary"), user("a prompt")], 5) is None


def test_the_marker_is_kept_once_across_retries():
    es = rounds_of([10] * 6)
    once = shed_for_retry(es, 200)
    assert 1 <= once.dropped_rounds < 5 and is_retry_marker(once.entries[0])
    twice = shed_for_retry(once.entries, 150)
    assert twice.dropped_rounds >= 1 and sum(1 for e in twice.entries if is_retry_marker(e)) == 1
    assert is_retry_marker(twice.entries[0])
    assert validate_history(project(twice.entries)) == []


def test_a_very_long_user_message_is_kept_by_head_and_tail_only_when_nothing_else_is_left():
    pasted = "HEAD of the paste " + "w" * 20_000 + " TAIL of the paste"
    es = rounds_of([100] * 2, note="SUMMARY " + "s" * 20_000)
    es.insert(2, user(pasted))
    small = shed_for_retry(es, 100)                    # tool output covers it: the paste is untouched
    assert small.shortened_messages == 0 and pasted in texts_of(small.entries)
    out = shed_for_retry(es, 1_000)                    # tool output and the older round are not enough
    assert (out.cleared_results, out.dropped_rounds, out.shortened_messages) == (2, 1, 1)
    assert out.shortened_tokens > 3_000 and out.shed_tokens >= 1_100
    text = texts_of(out.entries)
    assert "SUMMARY " + "s" * 20_000 in text                                  # a summary is never cut
    assert pasted not in text and pasted[:USER_HEAD_CHARS] in text and pasted[-USER_TAIL_CHARS:] in text
    assert "characters left out here" in text and validate_history(project(out.entries)) == []
    again = shed_for_retry(out.entries, 1_000)         # a shortened message is not cut again
    assert again is None


def test_re_attached_files_are_shed_like_tool_output():
    es = [user("SUMMARY", kind="summary"), user("<file>" + "f" * 8_000, kind="attachment", path="a.py"),
          *rounds_of([10])]
    out = shed_for_retry(es, 100)
    assert out.cleared_results == 1 and out.entries[1].text() == FILE_LEFT_OUT
    assert out.entries[1].kind == "attachment" and out.dropped_rounds == 0


def test_strip_orphans_removes_unanswerable_results():
    es = [user([tool_result_block("gone", "x"), {"type": "text", "text": "hi"}]),
          assistant([{"type": "tool_use", "id": "a", "name": "bash", "input": {}}], response_id="r"),
          user([tool_result_block("a", "ok")]), user([tool_result_block("zz", "orphan")])]
    out = strip_orphans(es)
    assert [b["type"] for b in out[0].content] == ["text"]
    assert len(out) == 3 and validate_history(project(out)) == []


def protected_texts(entries) -> list[str]:
    """What a retry may never lose: summaries' and snip markers' text, every user message's text."""
    out = []
    for e in entries:
        if not e.sent:
            continue
        if e.kind in ("summary", "snip_marker") or (e.kind == "message" and e.role == "user"):
            out += [b["text"] for b in e.content if b.get("type") == "text" and b["text"].strip()]
    return out


@settings(max_examples=examples(100), deadline=None)
@given(histories(min_rounds=1, max_rounds=20), st.one_of(st.none(), st.integers(1, 50_000)))
def test_shedding_never_leaves_an_orphan_nor_loses_a_users_words(entries, gap):
    entries = [user("EARLIER SUMMARY " + "s" * 300, kind="summary"), *entries]
    out = shed_for_retry(entries, gap)
    if out is None:
        return
    assert out.cleared_results + out.dropped_rounds >= 1
    assert validate_history(project(out.entries)) == []
    text = texts_of(out.entries)
    assert all(t in text for t in protected_texts(entries))
    newest = group_by_api_round(entries)[-1]
    if len(group_by_api_round(entries)) > 1:                  # the newest round stays (its results may be shed)
        assert [e.uuid for e in out.entries[-len(newest):]] == [e.uuid for e in newest]


# --- in the stage -------------------------------------------------------------------------------

async def test_retry_sheds_tool_output_and_succeeds(tmp_path):
    s = ScriptedSummarizer(ptl(205_000), ptl(201_000), SUMMARY)   # gaps of 5,000 and 1,000 tokens
    p = make_pipeline(tmp_path, s, llm_only=True)
    es = session(32)
    res = await p.run(es)
    assert len(s.calls) == 3
    cleared = [str(c["messages"]).count(TOOL_OUTPUT_LEFT_OUT) for c in s.calls]
    assert cleared[0] == 0 < cleared[1] < cleared[2] < 32
    assert len({len(c["messages"]) for c in s.calls}) == 1          # every round still there
    for c in s.calls:
        assert validate_history(c["messages"]) == []
    assert RETRY_MARKER not in str(s.calls)
    [report] = res.reports
    d = report.details
    assert d["ptl_retries"] == 2 and d["cleared_tool_results"] == cleared[2] and d["cleared_tokens"] >= 6_600
    assert d["dropped_rounds"] == 0 and d["dropped_tokens"] == 0
    assert f"{cleared[2]} tool outputs left out" in report.action
    assert res.entries[0].kind == "compact_boundary"


async def test_at_most_three_retries_then_the_history_is_kept(tmp_path):
    s = ScriptedSummarizer(SummarizeError("prompt is too long", prompt_too_long=True))   # no gap: 20% each time
    p = make_pipeline(tmp_path, s, llm_only=True)
    es = session(32)
    res = await p.run(es)
    assert len(s.calls) == 4                          # the first try and 3 retries
    assert res.entries == es
    report = res.reports[0]
    assert report.details["failed"] and "3 retries" in report.action and "tool outputs left out" in report.action
    assert report.details["ptl_retries"] == 3 and report.details["cleared_tool_results"] > 0


async def test_a_gap_larger_than_the_history_sheds_all_it_may_then_gives_up_keeping_every_word(tmp_path):
    s = ScriptedSummarizer(ptl(900_000))
    p = make_pipeline(tmp_path, s, llm_only=True)
    es = [user("EARLIER SUMMARY: the deploy key is in vault/deploy", kind="summary"), *session(32)]
    res = await p.run(es)
    assert len(s.calls) == 2
    last = s.calls[1]["messages"]
    assert validate_history(last) == [] and RETRY_MARKER in str(last[0])
    text = str(last)
    assert "EARLIER SUMMARY: the deploy key is in vault/deploy" in text
    assert "Please fix the parser bug" in text and all(f"Now check file {r + 1}, please." in text for r in range(32))
    assert "File 0 looks fine" not in text and "x" * 2_000 not in text
    assert res.entries == es and "never dropped" in res.reports[0].action
    assert res.reports[0].details["dropped_rounds"] == 63           # all but the newest


async def test_a_ptl_answer_given_as_text_is_retried_too(tmp_path):
    s = ScriptedSummarizer("Prompt is too long: 210000 tokens > 200000 maximum", SUMMARY)
    p = make_pipeline(tmp_path, s, llm_only=True)
    res = await p.run(session(32))
    assert len(s.calls) == 2 and res.entries[0].kind == "compact_boundary"
