"""Entries, invariants, rounds, token accounting and thresholds."""
from __future__ import annotations

import os
import stat

import pytest
from hypothesis import given, settings

from compaction import (ContextBudget, Entry, assistant, boundary, count_tokens, group_by_api_round, project,
                        read_transcript, tool_result_block, user, validate_history, write_transcript)
from compaction.accounting.tokens import adjust_anchor, breakdown, estimate_text

from tests.strategies import histories
from tests.hypothesis_budget import examples


def tu(i, name="bash"):
    return {"type": "tool_use", "id": f"t{i}", "name": name, "input": {"command": "ls"}}


def test_validate_accepts_a_tool_round():
    msgs = [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": [tu(1)]},
            {"role": "user", "content": [tool_result_block("t1", "out")]}]
    assert validate_history(msgs) == []


@pytest.mark.parametrize("msgs,needle", [
    ([], "at least one"),
    ([{"role": "assistant", "content": "x"}], "first message"),
    ([{"role": "user", "content": []}], "empty"),
    ([{"role": "user", "content": [{"type": "text", "text": " "}]}], "non-empty"),
    ([{"role": "user", "content": "a"}, {"role": "assistant", "content": [tu(1)]},
      {"role": "user", "content": "no result"}], "not answered"),
    ([{"role": "user", "content": [tool_result_block("t9", "x")]}], "no matching"),
    ([{"role": "user", "content": "a"}, {"role": "assistant", "content": [tu(1)]},
      {"role": "user", "content": [tool_result_block("t1", "x")]}, {"role": "assistant", "content": [tu(1)]}],
     "duplicate"),
])
def test_validate_reports_each_violation(msgs, needle):
    errors = validate_history(msgs)
    assert errors and any(needle in e for e in errors), errors


def test_unanswered_tool_use_allowed_only_on_last_message():
    msgs = [{"role": "user", "content": "a"}, {"role": "assistant", "content": [tu(1)]}]
    assert validate_history(msgs) == []


def test_grouping_by_response_id():
    es = [user("a"), assistant("x", response_id="r1"), assistant([tu(1)], response_id="r1"),
          user([tool_result_block("t1", "o")]), assistant("y", response_id="r2"), user("b")]
    groups = group_by_api_round(es)
    assert [len(g) for g in groups] == [1, 3, 2]


def test_projection_merges_roles_and_drops_boundaries():
    es = [user("a"), boundary("auto", 10, 5, None, "autocompact"), user("b"), assistant("x")]
    req = project(es)
    assert [m["role"] for m in req] == ["user", "assistant"]
    assert [b["text"] for b in req[0]["content"]] == ["a", "b"]


def test_estimates_prose_json_and_media():
    assert estimate_text("a" * 400) == 100
    assert estimate_text("{" + "a" * 398 + "}") == 200
    img = Entry({"role": "user", "content": [{"type": "image", "source": {}}]})
    assert img.tokens >= 2000


def test_count_is_anchored_on_latest_usage():
    es = [user("a" * 4000), assistant("b", response_id="r1",
                                      usage={"input_tokens": 10, "output_tokens": 5,
                                             "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000}),
          user("c" * 400)]
    assert count_tokens(es) == 1115 + es[2].tokens
    assert count_tokens(es[:1], overhead=50) == 50 + es[0].tokens
    adjusted = adjust_anchor(es, -100, upto=0)
    assert count_tokens(adjusted) == count_tokens(es) - 100
    assert es[1].meta == {}  # input untouched


def test_estimate_is_cached_per_entry():
    e = user("x" * 100)
    first = e.tokens
    assert "tokens" in e.__dict__ and e.tokens == first


def test_breakdown_adds_up_to_window():
    es = [user("hello"), assistant([tu(1)], response_id="r"), user([tool_result_block("t1", "z" * 400)])]
    b = ContextBudget(30_000, 8_000)
    cats = breakdown(es, system_tokens=100, tools_tokens=200, window=30_000, threshold=b.autocompact_threshold)
    assert cats["tool_results"] > cats["user_text"] > 0
    assert sum(cats.values()) == 30_000


def test_budget_defaults_match_claude_code():
    b = ContextBudget(200_000, 32_000)
    assert (b.effective_window, b.autocompact_threshold, b.warning_threshold, b.error_threshold,
            b.blocking_limit) == (180_000, 167_000, 147_000, 157_000, 177_000)
    assert [b.state(n) for n in (0, 147_000, 157_000, 167_000, 177_000)] == [
        "ok", "warning", "error", "autocompact", "blocking"]
    assert b.percent_left(0) == 100.0 and b.percent_left(500_000) == 0.0


@pytest.mark.parametrize("w", [1_000, 8_000, 30_000, 100_000, 199_999, 200_000, 1_000_000])
def test_threshold_order_holds_for_every_window(w):
    b = ContextBudget(w, 64_000)
    assert 0 < b.warning_threshold < b.error_threshold < b.autocompact_threshold < b.blocking_limit \
        < b.effective_window < w


def test_budget_overrides_and_off():
    assert ContextBudget(200_000, 32_000, autocompact_pct=50).autocompact_threshold == 90_000
    off = ContextBudget(200_000, 32_000, autocompact_enabled=False)
    assert off.autocompact_threshold == off.effective_window
    assert off.state(170_000) == "error" and off.state(178_000) == "blocking"
    with pytest.raises(ValueError, match="context_window"):
        ContextBudget(10)
    with pytest.raises(ValueError, match="autocompact_pct"):
        ContextBudget(autocompact_pct=0)


def test_transcript_is_private_and_round_trips(tmp_path):
    es = [user("a"), assistant("b", response_id="r1", usage={"input_tokens": 1, "output_tokens": 1})]
    p = write_transcript(tmp_path / "transcripts", es, "auto")
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(p.parent).st_mode) == 0o700
    back = read_transcript(p)
    assert [e.to_dict() for e in back] == [e.to_dict() for e in es]
    assert not [f for f in os.listdir(p.parent) if f.startswith(".tmp-")]


@settings(max_examples=examples(100), deadline=None)
@given(histories())
def test_generated_histories_are_valid(es):
    assert validate_history(project(es)) == []


def test_category_tally_reads_only_appended_entries_and_resums_a_new_list():
    from compaction.accounting.tokens import CategoryTally

    es = [user("hello there"), assistant([tu(1)], response_id="r"), user([tool_result_block("t1", "z" * 400)])]
    tally = CategoryTally()
    full = lambda xs: breakdown(xs, system_tokens=0, tools_tokens=0, window=30_000, threshold=25_000)  # noqa: E731
    first = breakdown(es, system_tokens=0, tools_tokens=0, window=30_000, threshold=25_000, tally=tally)
    assert first == full(es)
    es.append(assistant("a" * 800, response_id="r2"))
    grown = breakdown(es, system_tokens=0, tools_tokens=0, window=30_000, threshold=25_000, tally=tally)
    assert grown == full(es) and grown["assistant_text"] > first["assistant_text"]
    swapped = [es[0], es[-1]]
    assert breakdown(swapped, system_tokens=0, tools_tokens=0, window=30_000, threshold=25_000,
                     tally=tally) == full(swapped)


def test_transcripts_written_in_one_second_get_names_of_one_length(tmp_path):
    es = [user("a")]
    paths = [write_transcript(tmp_path / "transcripts", es, "auto", now=1_700_000_000.5) for _ in range(3)]
    assert len(set(paths)) == 3 and len({len(p.name) for p in paths}) == 1
    assert [p.name for p in paths] == sorted(p.name for p in paths)       # in the order written


def test_a_burst_of_transcripts_looks_up_each_name_once(tmp_path, monkeypatch):
    """Compactions in a burst (a demo session: hundreds within a minute) take names seconds ahead;
    looking again from the first second each time went over every name taken so far."""
    from pathlib import Path

    looked = []
    real = Path.exists

    def counting(self):
        looked.append(self.name)
        return real(self)

    monkeypatch.setattr(Path, "exists", counting)
    paths = [write_transcript(tmp_path / "transcripts", [user("a")], "auto", now=1_700_000_000.0) for _ in range(50)]
    assert len(set(paths)) == 50 and [p.name for p in paths] == sorted(p.name for p in paths)
    assert len(looked) <= 2 * 50
