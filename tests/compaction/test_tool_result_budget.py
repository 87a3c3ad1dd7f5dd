"""Layer 1: persisted outputs, frozen decisions, path trust, truncation without a session folder."""
from __future__ import annotations

import json
import os
import stat

import pytest

from compaction import Entry, PipelineState, count_tokens, project, tool_result_block, validate_history
from compaction.layers import tool_result_budget as trb
from tests.compaction.tool_result_helpers import call, ctx, history


def content(es, i=-1, j=0):
    return es[i].content[j]["content"]


BIG = "line of output\n" * 4_000  # 60,000 characters


def test_large_result_is_persisted_privately_and_replaced_by_a_preview(tmp_path):
    es = history(("toolu_1", "bash", BIG))
    res = trb.apply(es, ctx(es, session_dir=tmp_path))
    path = tmp_path / "tool-results" / "toolu_1.txt"
    assert path.read_text() == BIG
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    text = content(res.entries)
    assert text.startswith("<persisted-output>") and text.endswith("</persisted-output>")
    assert str(path) in text and "60,000 characters" in text
    assert len(text.encode()) < 2_600  # ~2 KB preview plus the note
    assert text.count("line of output") >= 100
    assert res.report is not None and res.report.tokens_after < res.report.tokens_before
    assert content(es) == BIG  # input untouched
    assert validate_history(project(res.entries)) == []
    assert not [f for f in os.listdir(path.parent) if f.startswith(".tmp-")]


def test_small_results_and_read_file_are_left_alone(tmp_path):
    es = history(("t1", "bash", "ok"), ("t2", "read_file", BIG))
    res = trb.apply(es, ctx(es, session_dir=tmp_path))
    assert res.report is None and res.entries is es
    assert not (tmp_path / "tool-results").exists()


def test_message_total_persists_largest_first_until_under_the_limit(tmp_path):
    sizes = {"a": 45_000, "b": 48_000, "c": 40_000, "d": 47_000, "e": 46_000}  # 226,000 in all
    es = history(*[(tid, "grep", "x" * n) for tid, n in sizes.items()])
    res = trb.apply(es, ctx(es, session_dir=tmp_path))
    persisted = sorted(p.stem for p in (tmp_path / "tool-results").iterdir())
    assert persisted == ["b"]  # 226,000 - 48,000 + ~2,300 < 200,000
    assert content(res.entries, j=1).startswith("<persisted-output>")
    assert content(res.entries, j=0) == "x" * 45_000


def test_decisions_are_frozen_and_reapplied_byte_identically(tmp_path):
    es = history(("toolu_1", "bash", BIG), ("toolu_2", "bash", "y" * 40_000))
    state = PipelineState()
    first = trb.apply(es, ctx(es, state, tmp_path)).entries
    frozen = content(first)
    # next turn: the loop appends a round to what it adopted
    nxt = first + [Entry({"role": "assistant", "content": [{"type": "text", "text": "done"}]}, response_id="r2")]
    again = trb.apply(nxt, ctx(nxt, state, tmp_path))
    assert again.report is None and content(again.entries, i=2) == frozen
    # resume: a new process, state from JSON, history rebuilt with the original content,
    # and a limit that would now persist the 40,000-character result too
    resumed = PipelineState.from_dict(json.loads(json.dumps(state.to_dict())))
    rebuilt = [Entry.from_dict(json.loads(json.dumps(e.to_dict()))) for e in es + nxt[3:]]
    (tmp_path / "tool-results" / "toolu_1.txt").unlink()  # lost file: restored from the original
    res = trb.apply(rebuilt, ctx(rebuilt, resumed, tmp_path, tool_result_max_chars=30_000))
    assert content(res.entries, i=2).encode() == frozen.encode()
    assert content(res.entries, i=2, j=1) == "y" * 40_000  # the keep decision is frozen as well
    assert (tmp_path / "tool-results" / "toolu_1.txt").read_text() == BIG
    assert "re-applied 1" in res.report.action


def test_reapplying_a_frozen_replacement_does_not_shift_the_anchor(tmp_path):
    es = history(("toolu_1", "bash", BIG)) + [
        Entry({"role": "assistant", "content": [{"type": "text", "text": "ok"}]}, response_id="r2",
              usage={"input_tokens": 5_000, "output_tokens": 10})]
    state = PipelineState()
    trb.apply(es[:3], ctx(es[:3], state, tmp_path))  # decided before it was ever sent
    rebuilt = [Entry.from_dict(e.to_dict()) for e in es]
    resumed = PipelineState.from_dict(json.loads(json.dumps(state.to_dict())))
    res = trb.apply(rebuilt, ctx(rebuilt, resumed, tmp_path))
    assert count_tokens(res.entries) == count_tokens(rebuilt) == 5_010  # the usage already saw the preview


def test_a_first_decision_before_the_anchor_shifts_it(tmp_path):
    es = history(("toolu_1", "bash", BIG)) + [
        Entry({"role": "assistant", "content": [{"type": "text", "text": "ok"}]}, response_id="r2",
              usage={"input_tokens": 20_000, "output_tokens": 10})]
    res = trb.apply(es, ctx(es, session_dir=tmp_path))
    freed = es[2].tokens - res.entries[2].tokens
    assert freed > 10_000
    assert count_tokens(res.entries) == count_tokens(es) - freed


def _tamper(state: PipelineState, tid: str, path: str) -> PipelineState:
    d = json.loads(json.dumps(state.to_dict()))
    rep = d["layers"]["tool_result_budget"]["replaced"][tid]
    rep["text"] = rep["text"].replace(rep["path"], path)
    rep["path"] = path
    return PipelineState.from_dict(d)


@pytest.mark.parametrize("where", ["dotdot", "absolute", "symlink"])
def test_a_stored_path_outside_the_session_folder_is_never_trusted(tmp_path, where):
    session = tmp_path / "session"
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    es = history(("toolu_1", "bash", BIG))
    state = PipelineState()
    trb.apply(es, ctx(es, state, session))
    canon = session / "tool-results" / "toolu_1.txt"
    if where == "dotdot":
        bad = str(session / "tool-results" / ".." / ".." / "outside.txt")
    elif where == "absolute":
        bad = str(outside)
    else:  # the canonical name, but a symlink pointing out of the folder
        canon.unlink()
        canon.symlink_to(outside)
        bad = str(canon)
    state = _tamper(state, "toolu_1", bad)
    rebuilt = [Entry.from_dict(e.to_dict()) for e in es]
    res = trb.apply(rebuilt, ctx(rebuilt, state, session))
    assert outside.read_text() == "secret"  # never written (nor followed)
    text = content(res.entries)
    assert str(canon) in text and (bad == str(canon) or bad not in text)
    assert not canon.is_symlink() and canon.read_text() == BIG  # re-persisted to the canonical path
    assert "re-persisted 1" in res.report.action
    stored = state.of("tool_result_budget")["replaced"]["toolu_1"]
    assert stored["path"] == str(canon)


def test_an_untrusted_path_without_the_original_is_left_alone(tmp_path):
    session = tmp_path / "session"
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    es = history(("toolu_1", "bash", BIG))
    state = PipelineState()
    applied = trb.apply(es, ctx(es, state, session)).entries
    state = _tamper(state, "toolu_1", str(outside))
    rebuilt = [Entry.from_dict(e.to_dict()) for e in applied]  # already carries the preview
    res = trb.apply(rebuilt, ctx(rebuilt, state, session))
    assert res.report is None and content(res.entries) == content(applied)
    assert outside.read_text() == "secret"


def test_a_symlinked_tool_results_folder_is_not_written_through(tmp_path):
    session = tmp_path / "session"
    session.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (session / "tool-results").symlink_to(elsewhere)
    es = history(("toolu_1", "bash", BIG))
    res = trb.apply(es, ctx(es, session_dir=session))
    assert list(elsewhere.iterdir()) == []
    assert content(res.entries).startswith("<truncated-output>")


def test_without_a_session_folder_results_are_truncated_with_a_note():
    es = history(("toolu_1", "bash", BIG))
    res = trb.apply(es, ctx(es))
    text = content(res.entries)
    assert text.startswith("<truncated-output>") and "no session folder" in text and "60,000 characters" in text
    assert len(text.encode()) < 2_600
    assert res.report is not None and "truncated 1" in res.report.action


def test_an_id_that_looks_like_a_path_cannot_escape(tmp_path):
    tid = "../../escape"
    es = history((tid, "bash", BIG))
    trb.apply(es, ctx(es, session_dir=tmp_path / "s"))
    files = list((tmp_path / "s" / "tool-results").iterdir())
    assert len(files) == 1 and files[0].name.startswith("id-")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def test_a_replacement_that_would_not_be_smaller_is_not_made(tmp_path):
    es = history(("toolu_1", "bash", "z" * 300))
    res = trb.apply(es, ctx(es, session_dir=tmp_path, tool_result_max_chars=10))
    assert res.report is None and content(res.entries) == "z" * 300


def test_a_turn_scans_only_entries_added_since_the_last_run(tmp_path, monkeypatch):
    es = history(("toolu_1", "bash", BIG))
    state = PipelineState()
    out = trb.apply(es, ctx(es, state, tmp_path)).entries
    seen: list[int] = []
    real = trb._process
    monkeypatch.setattr(trb, "_process", lambda entries, i, *a: seen.append(i) or real(entries, i, *a))
    nxt = out + [Entry({"role": "assistant", "content": [call("toolu_2")]}, response_id="r2"),
                 Entry({"role": "user", "content": [tool_result_block("toolu_2", "small")]})]
    trb.apply(nxt, ctx(nxt, state, tmp_path))
    assert seen == [4]
    seen.clear()
    trb.apply(nxt, ctx(nxt, PipelineState.from_dict(state.to_dict()), tmp_path))  # a resumed process rescans
    assert seen == [2, 4]


def test_limits_shrink_with_a_small_window(tmp_path):
    """CC's 50,000 characters are for a 200,000 window; at 30,000 the same share is 7,500."""
    from compaction import ContextBudget

    mid = "x" * 10_000
    es = history(("toolu_1", "bash", mid))
    assert trb.apply(es, ctx(es, session_dir=tmp_path)).report is None
    small = ctx(es, session_dir=tmp_path / "small", budget=ContextBudget(30_000, 4_000))
    assert trb.limits(small) == (7_500, 30_000)
    res = trb.apply(es, small)
    assert res.report is not None and content(res.entries).startswith("<persisted-output>")


def test_decisions_for_results_gone_from_the_history_are_forgotten(tmp_path):
    # issue 23: `replaced` kept a record for every result ever persisted (97 for a history of 9
    # entries after 1,000 turns); a full scan (a rewritten history, a resume) drops the gone ones
    old = history(("toolu_old", "bash", BIG))
    state = PipelineState()
    kept = trb.apply(old, ctx(old, state, tmp_path)).entries
    assert set(state.of(trb.NAME)["replaced"]) == {"toolu_old"}
    new = history(("toolu_new", "bash", BIG), ("toolu_small", "bash", "ok"))
    grown = kept + new
    res = trb.apply(grown, ctx(grown, state, tmp_path))
    assert set(state.of(trb.NAME)["replaced"]) == {"toolu_old", "toolu_new"}   # appended: nothing gone
    after = res.entries[3:]          # a compaction dropped the first round
    res = trb.apply(after, ctx(after, state, tmp_path))
    assert set(state.of(trb.NAME)["replaced"]) == {"toolu_new"}
    assert validate_history(project(res.entries)) == []
    assert content(res.entries) == state.of(trb.NAME)["replaced"]["toolu_new"]["text"]
    # a resume (a fresh state object from the saved one) applies the kept decision the same way
    resumed = PipelineState.from_dict(json.loads(json.dumps(state.to_dict())))
    again = trb.apply(new, ctx(new, resumed, tmp_path))
    assert content(again.entries) == content(res.entries)
    assert set(resumed.of(trb.NAME)["replaced"]) == {"toolu_new"}
